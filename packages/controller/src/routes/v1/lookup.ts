import { LookupQuery, LookupResult } from "@rlc/shared/schemas";
import { authProblems, compiledSerializer } from "../responses.js";
import type { RoutePlugin } from "../route-file.js";

const lookupRoutes: RoutePlugin = async (app, { deps }) => {
  app.get(
    "/v1/lookup",
    {
      schema: {
        tags: ["lookup"],
        summary: "Is an IP address or a domain in the lists?",
        description:
          "Entry layer (IP_RANGES containment, DOMAINS equality or subdomain), snapshot layer (every module's collected prefixes; for a domain, the addresses it resolved to) " +
          "and the longest prefix of the current revision. Never resolves anything live. " +
          "Answers come from an in-memory view of the tenant's modules, communities, IP_RANGES entries, snapshots and current revision. " +
          "It reads its writes: once a write (an entry, a module, a community, a rollback) has answered, or a job (a refresh) has ended, the next lookup sees it, " +
          "on every replica (another replica's write arrives within a bus round-trip; the view is also re-checked at least once a second). " +
          "A domain's entries and addresses are read from the database on each request.",
        querystring: LookupQuery,
        response: { 200: LookupResult, ...authProblems },
      },
      // The answer is built by the lookup service alone: compiled, not parsed (see compiledSerializer).
      serializerCompiler: compiledSerializer,
    },
    async (req) => deps.services.lookup.lookup(req.ctx().principal.tenantId, req.query.q) as never,
  );
};

export default lookupRoutes;
