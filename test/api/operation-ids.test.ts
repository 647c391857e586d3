import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operationIds } from "../../packages/controller/src/routes/table.js";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
let doc: any;

beforeAll(async () => {
  t = await startTestController();
  doc = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
});
afterAll(async () => t?.close());

function operations(): { key: string; operationId: unknown }[] {
  const out: { key: string; operationId: unknown }[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (["get", "post", "put", "patch", "delete"].includes(method)) out.push({ key: `${method.toUpperCase()} ${path}`, operationId: op.operationId });
    }
  }
  return out;
}

describe("OpenAPI operationId", () => {
  it("every operation has one, in camelCase", () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThan(100);
    const missing = ops.filter((o) => typeof o.operationId !== "string").map((o) => o.key);
    expect(missing).toEqual([]);
    for (const o of ops) expect(o.operationId, o.key).toMatch(/^[a-z][A-Za-z0-9]*$/);
  });

  it("no two operations share an id", () => {
    const seen = new Map<unknown, string>();
    const clashes: string[] = [];
    for (const o of operations()) {
      if (seen.has(o.operationId)) clashes.push(`${o.key} and ${seen.get(o.operationId)}: ${o.operationId}`);
      seen.set(o.operationId, o.key);
    }
    expect(clashes).toEqual([]);
  });

  it("the table names only operations the document has, with the id the document shows", () => {
    const served = new Map(operations().map((o) => [o.key, o.operationId]));
    for (const [key, id] of Object.entries(operationIds)) expect(served.get(key), key).toBe(id);
  });

  it("ids stay put: the ones clients were generated against", () => {
    expect(doc.paths["/v1/modules"].get.operationId).toBe("listModules");
    expect(doc.paths["/v1/modules"].post.operationId).toBe("createModule");
    expect(doc.paths["/v1/modules/{module_id}"].get.operationId).toBe("getModule");
    expect(doc.paths["/v1/revisions/{revision_a}/diff/{revision_b}"].get.operationId).toBe("diffRevisions");
    expect(doc.paths["/v1/apply"].post.operationId).toBe("applyRevision");
  });
});
