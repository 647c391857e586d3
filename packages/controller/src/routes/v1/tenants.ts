import { CreatedTenant, CreateTenantBody, ListQuery, Tenant, TenantParams } from "@rlc/shared/schemas";
import { deployment } from "../access.js";
import { resource, resourceRoutes } from "../resource-routes.js";
import type { RoutePlugin } from "../route-file.js";

const tenantRoutes: RoutePlugin = async (app, { deps }) => {
  const tenants = deps.services.tenants;

  resourceRoutes(
    app,
    resource({
      tags: ["tenants"],
      path: "/v1/tenants",
      id: "id",
      params: TenantParams,
      one: "a tenant",
      many: "tenants",
      item: Tenant,
      // Tenants are read across tenants, so reads take no request context.
      service: { list: (_ctx, query) => tenants.list(query), create: tenants.create, get: (_ctx, id) => tenants.get(id) },
      createdId: "tenant_id",
      // The tenants are the deployment's: a superadmin of another tenant manages its own tenant's keys, never the list of tenants.
      config: deployment,
      list: { summary: "List tenants (superadmin of tenant default)", querystring: ListQuery },
      create: {
        summary: "Create a tenant with its first admin key (superadmin of tenant default)",
        description: "The admin key's secret is shown once, in this answer. The creation is audited in the caller's tenant.",
        body: CreateTenantBody,
        response: CreatedTenant,
      },
      read: { summary: "Read a tenant (superadmin of tenant default)" },
    }),
  );
};

export default tenantRoutes;
