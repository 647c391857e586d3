import Fastify from "fastify";
import type { FastifyPluginAsyncZod } from "fastify-type-provider-zod";
import { describe, expect, it } from "vitest";
import type { AppDeps } from "../../packages/controller/src/app-deps.js";
import { operationIds, registerRoutes, routeTable } from "../../packages/controller/src/routes/table.js";

const deps = {} as AppDeps;
const things: FastifyPluginAsyncZod<{ deps: AppDeps }> = async (app) => {
  app.get("/v1/things", async () => []);
  app.post("/v1/things/:thing_id/do", async () => ({}));
};

describe("the route table", () => {
  it("registers a file whose every route has an id in its row", async () => {
    const app = Fastify();
    await registerRoutes(app, deps, [{ routes: things, operationIds: { "GET /v1/things": "listThings", "POST /v1/things/{thing_id}/do": "doThing" } }]);
    expect((await app.inject({ method: "GET", url: "/v1/things" })).statusCode).toBe(200);
    await app.close();
  });

  it("stops the start on a route without an id, naming it", async () => {
    const app = Fastify();
    await expect(registerRoutes(app, deps, [{ routes: things, operationIds: { "GET /v1/things": "listThings" } }])).rejects.toThrow(
      "POST /v1/things/{thing_id}/do has no operationId in routes/table.ts",
    );
  });

  it("gives each id to one operation only", () => {
    const ids = routeTable.flatMap((file) => Object.values(file.operationIds));
    expect(new Set(ids).size).toBe(ids.length);
    expect(Object.keys(operationIds)).toHaveLength(ids.length);
  });
});
