import Fastify from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { Db } from "../../packages/controller/src/plugins/types.js";
import { resource, resourceRoutes } from "../../packages/controller/src/routes/resource-routes.js";
import type { RequestContext } from "../../packages/controller/src/services/access/context.js";

// The helpers' types are checked by `tsc -p test/tsconfig.json` (npm run lint): each
// `@ts-expect-error` below fails that check the day a mismatched service compiles again.

const Params = z.strictObject({ list_id: z.string(), item_id: z.coerce.number().int() });
const ParentParams = z.strictObject({ list_id: z.string() });
const Item = z.object({ id: z.number(), list_id: z.string(), name: z.string() });
const Body = z.strictObject({ name: z.string() });
type Item = z.output<typeof Item>;

const declare = (service: object) => ({
  tags: ["things"],
  path: "/v1/lists/:list_id/items" as const,
  id: "item_id" as const,
  params: Params,
  parentParams: ParentParams,
  one: "an item",
  many: "items",
  item: Item,
  service,
});

describe("resource routes: the service calls are typed by the resource", () => {
  it("a service whose arguments match the path parameters, leading arguments and body compiles", () => {
    const r = resource({
      ...declare({}),
      leadingArgs: ["kind"] as const,
      service: {
        get: async (_ctx: RequestContext, _kind: "kind", listId: string, itemId: number) => ({ id: itemId, list_id: listId, name: "x" }),
        update: async (_tx: Db, _ctx: RequestContext, _kind: "kind", listId: string, itemId: number, body: { name: string }) => ({
          id: itemId,
          list_id: listId,
          name: body.name,
        }),
      },
      read: {},
      update: { body: Body },
    });
    expect(r.id).toBe("item_id");
  });

  it("a service that takes a path parameter as another type does not compile", () => {
    const r = resource({
      ...declare({}),
      // @ts-expect-error item_id is parsed as a number by Params, the service wants a string
      service: { get: async (_ctx: RequestContext, _listId: string, itemId: string) => ({ id: Number(itemId) }) },
      read: {},
    });
    expect(r.read).toEqual({});
  });

  it("a service that misses the collection's path parameter does not compile", () => {
    const r = resource({
      ...declare({}),
      // @ts-expect-error the collection /v1/lists/:list_id/items hands list_id before the body
      service: { create: async (_tx: Db, _ctx: RequestContext, body: { name: string }) => ({ id: 1, name: body.name }) },
      create: { body: Body },
    });
    expect(r.create?.body).toBe(Body);
  });

  it("a service that ignores the write arguments' types does not compile", () => {
    const r = resource({
      ...declare({}),
      writeArgs: [42] as const,
      service: {
        // @ts-expect-error the write argument is the number 42, the service wants a string
        update: async (_tx: Db, _ctx: RequestContext, _listId: string, _itemId: number, _body: { name: string }, _rule: string) => ({}),
      },
      update: { body: Body },
    });
    expect(r.writeArgs).toEqual([42]);
  });
});

describe("resource routes: what the service receives", () => {
  const ctx = { principal: { tenantId: "t" } } as unknown as RequestContext;
  const sql = {} as Db;

  type App = Parameters<typeof resourceRoutes>[0];

  async function appWith(register: (app: App) => void) {
    const app = Fastify();
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(serializerCompiler);
    // What plugins/types.ts promises every request: its context, and a write in one transaction.
    app.decorateRequest("ctx", () => ctx);
    app.decorateRequest("mutate", async (reply, fn) => {
      const outcome = await fn(sql, ctx);
      reply.code(outcome.status).headers(outcome.headers ?? {});
      return outcome.body;
    });
    await app.register(async (scope) => register(scope as unknown as App));
    return app;
  }

  it("hands the path parameters in path order, as the params schema parses them", async () => {
    const calls: unknown[][] = [];
    const app = await appWith((scope) =>
      resourceRoutes(
        scope,
        resource({
          ...declare({}),
          service: {
            get: async (_ctx: RequestContext, listId: string, itemId: number): Promise<Item> => {
              calls.push([listId, itemId]);
              return { id: itemId, list_id: listId, name: "x" };
            },
            create: async (_tx: Db, _ctx: RequestContext, listId: string, body: { name: string }): Promise<Item> => ({
              id: 7,
              list_id: listId,
              name: body.name,
            }),
          },
          read: {},
          create: { body: Body },
        }),
      ),
    );
    const read = await app.inject({ method: "GET", url: "/v1/lists/a/items/12" });
    expect(read.statusCode).toBe(200);
    expect(calls).toEqual([["a", 12]]);

    const created = await app.inject({ method: "POST", url: "/v1/lists/a/items", payload: { name: "n" } });
    expect(created.statusCode).toBe(201);
    expect(created.headers.location).toBe("/v1/lists/a/items/7");
    await app.close();
  });

  it("a declared operation whose method the service lacks stops the start", async () => {
    await expect(
      appWith((scope) => resourceRoutes(scope, { ...declare({}), service: { get: async () => ({ id: 1 }) }, read: {}, create: { body: Body } })),
    ).rejects.toThrow(/has no create\(\)/);
  });
});
