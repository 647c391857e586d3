import { Catalog } from "@rlc/shared/schemas";
import { z } from "zod";
import { authProblems } from "../responses.js";
import type { RoutePlugin } from "../route-file.js";

const catalogRoutes: RoutePlugin = async (app, { deps }) => {
  app.get(
    "/v1/router-lists/catalog",
    {
      schema: {
        tags: ["catalog"],
        summary: "The tenant's whole route-list configuration in one read",
        description: "Modules with their community, entries and CDN sources, plus communities and DoH profiles. Not paginated.",
        querystring: z.strictObject({}),
        response: { 200: Catalog, ...authProblems },
      },
    },
    async (req) => deps.services.catalog.read(req.ctx()),
  );
};

export default catalogRoutes;
