import { CreateDohProfileBody, DohProfile, DohProfileListQuery, Empty, IdParams, page, UpdateDohProfileBody } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { createOutboundRules } from "../../services/ingest/outbound-rules.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["doh-profiles"];

const dohProfileRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const profiles = deps.services.dohProfiles;
  const rules = createOutboundRules(deps.outbound, deps.config.APP_OUTBOUND_ALLOW_CIDRS);

  app.get(
    "/v1/doh-profiles",
    { schema: { tags, summary: "List DoH profiles", querystring: DohProfileListQuery, response: { 200: page(DohProfile), ...authProblems } } },
    async (req) => profiles.list(deps.sql, req.ctx(), req.query),
  );

  app.post(
    "/v1/doh-profiles",
    {
      schema: {
        tags,
        summary: "Create a DoH profile",
        description:
          "`wire`: RFC 8484 (GET `?dns=` or POST); `json`: dns-json (GET). `url` is https, or plain http to an IP address allowed by " +
          "`APP_OUTBOUND_ALLOW_CIDRS`. Defaults: GET, wire, 3000 ms.",
        body: CreateDohProfileBody,
        response: { 201: DohProfile, ...writeProblems },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const body = await profiles.create(tx, ctx, req.body, rules);
        return { status: 201, body, headers: { location: `/v1/doh-profiles/${body.id}` } };
      }),
  );

  app.get(
    "/v1/doh-profiles/:id",
    { schema: { tags, summary: "Read a DoH profile", params: IdParams, response: { 200: DohProfile, ...authProblems, ...problems(404) } } },
    async (req) => profiles.get(deps.sql, req.ctx(), req.params.id),
  );

  app.patch(
    "/v1/doh-profiles/:id",
    {
      schema: {
        tags,
        summary: "Update a DoH profile",
        params: IdParams,
        body: UpdateDohProfileBody,
        response: { 200: DohProfile, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await profiles.update(tx, ctx, req.params.id, req.body, rules) })),
  );

  app.delete(
    "/v1/doh-profiles/:id",
    {
      schema: {
        tags,
        summary: "Delete a DoH profile",
        description: "409 naming the modules (`modules: [{id, name}]`) while a module uses it.",
        params: IdParams,
        response: { 204: Empty, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        await profiles.remove(tx, ctx, req.params.id);
        return { status: 204, body: undefined };
      }),
  );
};

export default dohProfileRoutes;
