import { CreatedTenant, CreateTenantBody, ListQuery, page, Tenant, TenantParams } from "@rlc/shared/schemas";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import type { AppDeps } from "../../app-deps.js";
import { authProblems, problems, writeProblems } from "../responses.js";

const tags = ["tenants"];
const superadmin = { role: "superadmin" as const };

const tenantRoutes: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app, { deps }) => {
  const tenants = deps.services.tenants;

  app.get(
    "/v1/tenants",
    { schema: { tags, summary: "List tenants (superadmin)", querystring: ListQuery, response: { 200: page(Tenant), ...authProblems } }, config: superadmin },
    async (req) => tenants.list(deps.sql, req.query),
  );

  app.post(
    "/v1/tenants",
    {
      schema: {
        tags,
        summary: "Create a tenant with its first admin key (superadmin)",
        description: "The admin key's secret is shown once, in this answer. The creation is audited in the caller's tenant.",
        body: CreateTenantBody,
        response: { 201: CreatedTenant, ...writeProblems },
      },
      config: superadmin,
    },
    async (req, reply) =>
      req.mutate(reply, async (tx, ctx) => {
        const body = await tenants.create(tx, ctx, req.body);
        return { status: 201, body, headers: { location: `/v1/tenants/${body.tenant_id}` } };
      }),
  );

  app.get(
    "/v1/tenants/:id",
    {
      schema: { tags, summary: "Read a tenant (superadmin)", params: TenantParams, response: { 200: Tenant, ...authProblems, ...problems(404) } },
      config: superadmin,
    },
    async (req) => tenants.get(deps.sql, req.params.id),
  );
};

export default tenantRoutes;
