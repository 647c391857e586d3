import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintApiKey } from "../../packages/controller/src/services/access/api-keys.js";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("tenants", () => {
  it("a superadmin creates a tenant whose admin key works only in that tenant", async () => {
    const res = await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "acme" } });
    expect(res.statusCode).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ name: "acme", admin_key: { role: "admin", tenant_id: body.tenant_id } });
    const session = await t.call(body.admin_key.secret, { method: "GET", url: "/v1/auth/session" });
    expect(session.json()).toMatchObject({ tenant_id: body.tenant_id, tenant_name: "acme", role: "admin" });
    // The new admin sees only its own tenant's keys.
    const keys = await t.call(body.admin_key.secret, { method: "GET", url: "/v1/api-keys" });
    expect(keys.json().items).toHaveLength(1);
    const read = await t.call(t.rootKey, { method: "GET", url: `/v1/tenants/${body.tenant_id}` });
    expect(read.json()).toEqual({ tenant_id: body.tenant_id, name: "acme", created_at: body.created_at });
  });

  it("is audited in the creating key's tenant", async () => {
    const audit = await t.call(t.rootKey, { method: "GET", url: "/v1/audit?resource_type=tenant" });
    expect(audit.json().items[0]).toMatchObject({ action: "create", resource_type: "tenant" });
  });

  it("only superadmins manage tenants, and names are checked", async () => {
    const admin = (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "a", role: "admin" } })).json().secret;
    expect((await t.call(admin, { method: "GET", url: "/v1/tenants" })).statusCode).toBe(403);
    expect((await t.call(admin, { method: "POST", url: "/v1/tenants", payload: { name: "nope" } })).statusCode).toBe(403);
    expect((await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "Bad_Name" } })).statusCode).toBe(400);
  });

  it("a superadmin of another tenant manages no tenant, its own included; its session lists no tenant permission", async () => {
    const beta = (await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "beta" } })).json();
    // What `controller key create` makes: a superadmin key in a tenant other than default.
    const betaRoot = (await mintApiKey(t.controller.db.sql, { tenantId: beta.tenant_id, name: "root", role: "superadmin", now: new Date() })).secret;
    const home = (await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;
    for (const [method, url, payload] of [
      ["GET", "/v1/tenants"],
      ["GET", `/v1/tenants/${home}`],
      ["GET", `/v1/tenants/${beta.tenant_id}`],
      ["POST", "/v1/tenants", { name: "gamma" }],
    ] as const) {
      const res = await t.call(betaRoot, { method, url, ...(payload ? { payload } : {}) });
      expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(403);
      expect(res.json().code).toBe("forbidden");
    }
    const session = (await t.call(betaRoot, { method: "GET", url: "/v1/auth/session" })).json();
    expect(session.permissions).not.toContain("bgp:tenants:manage");
    expect(session.permissions).not.toContain("bgp:maintenance:db");
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().permissions).toContain("bgp:tenants:manage");
    // It still manages its own tenant's keys.
    expect((await t.call(betaRoot, { method: "POST", url: "/v1/api-keys", payload: { name: "b2", role: "superadmin" } })).statusCode).toBe(201);
  });

  it("lists tenants page by page without repeats", async () => {
    for (const n of ["p1", "p2", "p3"]) await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: n } });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res: any = (await t.call(t.rootKey, { method: "GET", url: `/v1/tenants?limit=2${cursor ? `&cursor=${cursor}` : ""}` })).json();
      seen.push(...res.items.map((x: { name: string }) => x.name));
      cursor = res.next_cursor;
      expect(res.has_more).toBe(cursor !== null);
    } while (cursor);
    expect(seen).toEqual(["p3", "p2", "p1", "beta", "acme", "default"]);
  });
});
