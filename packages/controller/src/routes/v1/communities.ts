import { Community, CommunityListQuery, CreateCommunityBody, Empty, IdParams, page, UpdateCommunityBody } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["communities"];

const communityRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const communities = deps.services.communities;

  app.get(
    "/v1/communities",
    { schema: { tags, summary: "List communities", querystring: CommunityListQuery, response: { 200: page(Community), ...authProblems } } },
    async (req) => communities.list(deps.sql, req.ctx(), req.query),
  );

  app.post(
    "/v1/communities",
    {
      schema: {
        tags,
        summary: "Create a community",
        description: "Standard `ASN:VALUE` or large `ASN:V1:V2`, stored canonical; unique in the tenant (409).",
        body: CreateCommunityBody,
        response: { 201: Community, ...writeProblems },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const body = await communities.create(tx, ctx, req.body);
        return { status: 201, body, headers: { location: `/v1/communities/${body.id}` } };
      }),
  );

  app.get(
    "/v1/communities/:id",
    { schema: { tags, summary: "Read a community", params: IdParams, response: { 200: Community, ...authProblems, ...problems(404) } } },
    async (req) => communities.get(deps.sql, req.ctx(), req.params.id),
  );

  app.patch(
    "/v1/communities/:id",
    {
      schema: {
        tags,
        summary: "Update a community",
        params: IdParams,
        body: UpdateCommunityBody,
        response: { 200: Community, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await communities.update(tx, ctx, req.params.id, req.body) })),
  );

  app.delete(
    "/v1/communities/:id",
    {
      schema: {
        tags,
        summary: "Delete a community",
        description: "409 naming the modules (`modules: [{id, name}]`) while a module uses it.",
        params: IdParams,
        response: { 204: Empty, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        await communities.remove(tx, ctx, req.params.id);
        return { status: 204, body: undefined };
      }),
  );
};

export default communityRoutes;
