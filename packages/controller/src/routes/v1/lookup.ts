import { LookupQuery, LookupResult } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app.js";
import { authProblems } from "../responses.js";

const lookupRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  app.get(
    "/v1/lookup",
    {
      schema: {
        tags: ["lookup"],
        summary: "Is an IP address or a domain in the lists?",
        description:
          "Entry layer (IP_RANGES containment, DOMAINS equality or subdomain), snapshot layer (every module's collected prefixes; for a domain, the addresses it resolved to) " +
          "and the longest prefix of the current revision. Never resolves anything live. " +
          "Answers come from an in-memory view of the tenant's modules, communities, IP_RANGES entries, snapshots and current revision that is " +
          "checked against the database at most once a second, so a change (an entry, a module, a refresh, a new revision) shows up here within a second " +
          "(a domain's entries and addresses are read from the database on each request).",
        querystring: LookupQuery,
        response: { 200: LookupResult, ...authProblems },
      },
    },
    async (req) => deps.services.lookup.lookup(deps.sql, req.principal!.tenantId, req.query.q) as never,
  );
};

export default lookupRoutes;
