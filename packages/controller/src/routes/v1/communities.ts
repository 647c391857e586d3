import { Community, CommunityListQuery, CreateCommunityBody, IdParams, UpdateCommunityBody } from "@rlc/shared/schemas";
import { resource, resourceRoutes } from "../resource-routes.js";
import type { RoutePlugin } from "../route-file.js";

const communityRoutes: RoutePlugin = async (app, { deps }) => {
  resourceRoutes(
    app,
    resource({
      tags: ["communities"],
      path: "/v1/communities",
      id: "id",
      params: IdParams,
      one: "a community",
      many: "communities",
      item: Community,
      service: deps.services.communities,
      list: { querystring: CommunityListQuery },
      create: { description: "Standard `ASN:VALUE` or large `ASN:V1:V2`, stored canonical; unique in the tenant (409).", body: CreateCommunityBody },
      read: {},
      update: { body: UpdateCommunityBody },
      remove: { description: "409 naming the modules (`modules: [{id, name}]`) while a module uses it." },
    }),
  );
};

export default communityRoutes;
