import { CreateModuleBody, Empty, Module, ModuleListQuery, ModuleParams, page, UpdateModuleBody } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["modules"];

const moduleRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const modules = deps.services.modules;

  app.get(
    "/v1/modules",
    {
      schema: {
        tags,
        summary: "List modules",
        description: "Newest first. Filters: `type`, `enabled`, `q` (name contains).",
        querystring: ModuleListQuery,
        response: { 200: page(Module), ...authProblems },
      },
    },
    async (req) => modules.list(deps.sql, req.ctx(), req.query),
  );

  app.post(
    "/v1/modules",
    {
      schema: {
        tags,
        summary: "Create a module",
        description:
          "`name` is unique in the tenant (409). `type` is fixed from here on. `community_id` and `doh_profile_ids` must name resources " +
          "of the tenant (400). DoH fields are for DOMAINS modules only (400 elsewhere, except `[]` and null).",
        body: CreateModuleBody,
        response: { 201: Module, ...writeProblems },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const body = await modules.create(tx, ctx, req.body);
        return { status: 201, body, headers: { location: `/v1/modules/${body.id}` } };
      }),
  );

  app.get(
    "/v1/modules/:module_id",
    { schema: { tags, summary: "Read a module", params: ModuleParams, response: { 200: Module, ...authProblems, ...problems(404) } } },
    async (req) => modules.get(deps.sql, req.ctx(), req.params.module_id),
  );

  app.patch(
    "/v1/modules/:module_id",
    {
      schema: {
        tags,
        summary: "Update a module",
        description: "Members left out keep their value; `doh_resolver_policy` members are merged into the current policy (null resets it).",
        params: ModuleParams,
        body: UpdateModuleBody,
        response: { 200: Module, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) => req.mutate(reply, async (tx, ctx) => ({ status: 200, body: await modules.update(tx, ctx, req.params.module_id, req.body) })),
  );

  app.delete(
    "/v1/modules/:module_id",
    {
      schema: {
        tags,
        summary: "Delete a module with its entries, sources and snapshot",
        description: "The next refresh builds a revision without it; revisions already made keep their content.",
        params: ModuleParams,
        response: { 204: Empty, ...writeProblems, ...problems(404) },
      },
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        await modules.remove(tx, ctx, req.params.module_id);
        return { status: 204, body: undefined };
      }),
  );
};

export default moduleRoutes;
