import { CreateModuleBody, Module, ModuleListQuery, ModuleParams, UpdateModuleBody } from "@rlc/shared/schemas";
import { resource, resourceRoutes } from "../resource-routes.js";
import type { RoutePlugin } from "../route-file.js";

const moduleRoutes: RoutePlugin = async (app, { deps }) => {
  resourceRoutes(
    app,
    resource({
      tags: ["modules"],
      path: "/v1/modules",
      id: "module_id",
      params: ModuleParams,
      one: "a module",
      many: "modules",
      item: Module,
      service: deps.services.modules,
      list: { description: "Newest first. Filters: `type`, `enabled`, `q` (name contains).", querystring: ModuleListQuery },
      create: {
        description:
          "`name` is unique in the tenant (409). `type` is fixed from here on. `community_id` and `doh_profile_ids` must name resources " +
          "of the tenant (400). DoH fields are for DOMAINS modules only (400 elsewhere, except `[]` and null).",
        body: CreateModuleBody,
      },
      read: {},
      update: {
        description: "Members left out keep their value; `doh_resolver_policy` members are merged into the current policy (null resets it).",
        body: UpdateModuleBody,
      },
      remove: {
        summary: "Delete a module with its entries, sources and snapshot",
        description: "The next refresh builds a revision without it; revisions already made keep their content.",
      },
    }),
  );
};

export default moduleRoutes;
