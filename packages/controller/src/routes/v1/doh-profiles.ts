import { CreateDohProfileBody, DohProfile, DohProfileListQuery, IdParams, UpdateDohProfileBody } from "@rlc/shared/schemas";
import { resource, resourceRoutes } from "../resource-routes.js";
import type { RoutePlugin } from "../route-file.js";

const dohProfileRoutes: RoutePlugin = async (app, { deps }) => {
  resourceRoutes(
    app,
    resource({
      tags: ["doh-profiles"],
      path: "/v1/doh-profiles",
      id: "id",
      params: IdParams,
      one: "a DoH profile",
      many: "DoH profiles",
      item: DohProfile,
      // A profile's URL is checked against the outbound policy when it is written (the service holds the rules).
      service: deps.services.dohProfiles,
      list: { querystring: DohProfileListQuery },
      create: {
        description:
          "`wire`: RFC 8484 (GET `?dns=` or POST); `json`: dns-json (GET). `url` is https, or plain http to an IP address allowed by " +
          "`APP_OUTBOUND_ALLOW_CIDRS`. Defaults: GET, wire, 3000 ms.",
        body: CreateDohProfileBody,
      },
      read: {},
      update: {
        description:
          "Header values are bound to the URL's origin (scheme, host and port): moving `url` to another origin drops the stored values the " +
          "same request does not send again (all of them without `headers`), and `********` for a header is then 400 `validation_failed`. " +
          "The next query to the new origin carries only what this request sent.",
        body: UpdateDohProfileBody,
      },
      remove: { description: "409 naming the modules (`modules: [{id, name}]`) while a module uses it." },
    }),
  );
};

export default dohProfileRoutes;
