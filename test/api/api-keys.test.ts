import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock, startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
const clock = manualClock();

async function mintKey(by: string, role: string, name = `${role} key`) {
  const res = await t.call(by, { method: "POST", url: "/v1/api-keys", payload: { name, role } });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; secret: string; key_prefix: string; role: string };
}

beforeAll(async () => {
  t = await startTestController({ clock });
});
afterAll(async () => t?.close());

describe("API keys - roles", () => {
  it("a viewer cannot list or create keys", async () => {
    const viewer = await mintKey(t.rootKey, "viewer");
    expect((await t.call(viewer.secret, { method: "GET", url: "/v1/api-keys" })).statusCode).toBe(403);
    const res = await t.call(viewer.secret, { method: "POST", url: "/v1/api-keys", payload: { name: "x", role: "viewer" } });
    expect(res.statusCode).toBe(403);
    expect(res.headers["content-type"]).toContain("application/problem+json");
    expect(res.json().code).toBe("forbidden");
  });

  it("an operator can mint viewers and operators but not an admin", async () => {
    const op = await mintKey(t.rootKey, "operator");
    await mintKey(op.secret, "viewer");
    await mintKey(op.secret, "operator");
    const res = await t.call(op.secret, { method: "POST", url: "/v1/api-keys", payload: { name: "up", role: "admin" } });
    expect(res.statusCode).toBe(403);
  });

  it("an operator cannot raise a key above its own role nor change a higher key", async () => {
    const op = await mintKey(t.rootKey, "operator");
    const viewer = await mintKey(op.secret, "viewer");
    const admin = await mintKey(t.rootKey, "admin");
    expect((await t.call(op.secret, { method: "PATCH", url: `/v1/api-keys/${viewer.id}`, payload: { role: "admin" } })).statusCode).toBe(403);
    expect((await t.call(op.secret, { method: "PATCH", url: `/v1/api-keys/${admin.id}`, payload: { name: "mine" } })).statusCode).toBe(403);
    expect((await t.call(op.secret, { method: "DELETE", url: `/v1/api-keys/${admin.id}` })).statusCode).toBe(403);
    expect((await t.call(op.secret, { method: "POST", url: `/v1/api-keys/${admin.id}/rotate`, payload: {} })).statusCode).toBe(403);
    const ok = await t.call(op.secret, { method: "PATCH", url: `/v1/api-keys/${viewer.id}`, payload: { role: "operator", name: "promoted" } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toMatchObject({ role: "operator", name: "promoted" });
  });

  it("an admin can mint an admin but not a superadmin", async () => {
    const admin = await mintKey(t.rootKey, "admin");
    await mintKey(admin.secret, "admin");
    const res = await t.call(admin.secret, { method: "POST", url: "/v1/api-keys", payload: { name: "s", role: "superadmin" } });
    expect(res.statusCode).toBe(403);
  });

  it("the secret has the documented shape and is never listed", async () => {
    const k = await mintKey(t.rootKey, "viewer");
    expect(k.secret).toMatch(new RegExp(`^rlk_${k.key_prefix}_[A-Za-z0-9_-]{43}$`));
    const list = await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?limit=500" });
    expect(list.body).not.toContain(k.secret.slice(`rlk_${k.key_prefix}_`.length));
    const one = await t.call(t.rootKey, { method: "GET", url: `/v1/api-keys/${k.id}` });
    expect(one.json()).not.toHaveProperty("secret");
  });
});

describe("API keys - lifecycle", () => {
  it("a revoked key gets 401 with WWW-Authenticate", async () => {
    const k = await mintKey(t.rootKey, "viewer");
    expect((await t.call(k.secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(200);
    expect((await t.call(t.rootKey, { method: "DELETE", url: `/v1/api-keys/${k.id}` })).statusCode).toBe(204);
    const res = await t.call(k.secret, { method: "GET", url: "/v1/auth/session" });
    expect(res.statusCode).toBe(401);
    expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
    expect(res.json().code).toBe("unauthenticated");
    const shown = await t.call(t.rootKey, { method: "GET", url: `/v1/api-keys/${k.id}` });
    expect(shown.json().revoked_at).not.toBeNull();
  });

  it("rotation keeps the old secret working for the grace period only", async () => {
    const k = await mintKey(t.rootKey, "operator");
    const rotated = await t.call(k.secret, { method: "POST", url: `/v1/api-keys/${k.id}/rotate`, payload: { grace_seconds: 60 } });
    expect(rotated.statusCode).toBe(200);
    const next = rotated.json().secret as string;
    expect(next).not.toBe(k.secret);
    expect(rotated.json().key_prefix).toBe(k.key_prefix);
    expect((await t.call(k.secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(200);
    expect((await t.call(next, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(200);
    clock.advance(61_000);
    expect((await t.call(k.secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(401);
    expect((await t.call(next, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(200);
  });

  it("rotation without grace ends the old secret at once", async () => {
    const k = await mintKey(t.rootKey, "operator");
    const rotated = await t.call(k.secret, { method: "POST", url: `/v1/api-keys/${k.id}/rotate` });
    expect(rotated.statusCode).toBe(200);
    expect((await t.call(k.secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(401);
    expect((await t.call(rotated.json().secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(200);
  });

  it("an expired key gets 401", async () => {
    const res = await t.call(t.rootKey, {
      method: "POST",
      url: "/v1/api-keys",
      payload: { name: "short", role: "viewer", expires_at: new Date(clock.now() + 5000).toISOString() },
    });
    const k = res.json();
    expect((await t.call(k.secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(200);
    clock.advance(6000);
    expect((await t.call(k.secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(401);
  });

  it("last_used_at is tracked", async () => {
    const k = await mintKey(t.rootKey, "viewer");
    await t.call(k.secret, { method: "GET", url: "/v1/auth/session" });
    await new Promise((r) => setTimeout(r, 100)); // the touch is off the request path
    const shown = await t.call(t.rootKey, { method: "GET", url: `/v1/api-keys/${k.id}` });
    expect(shown.json().last_used_at).toBe(new Date(clock.now()).toISOString());
  });

  it("the session names the tenant, role and permissions", async () => {
    const k = await mintKey(t.rootKey, "viewer");
    const res = await t.call(k.secret, { method: "GET", url: "/v1/auth/session", headers: { "x-tenant-id": "00000000-0000-0000-0000-000000000000" } });
    expect(res.json()).toMatchObject({ tenant_name: "default", role: "viewer", key_id: k.id, key_prefix: k.key_prefix });
    expect(res.json().permissions).toContain("bgp:monitoring:read");
  });
});

describe("API keys - who manages whom", () => {
  const session = async (secret: string) => (await t.call(secret, { method: "GET", url: "/v1/auth/session" })).statusCode;
  const rotate = (by: string, id: string, payload: object = {}) => t.call(by, { method: "POST", url: `/v1/api-keys/${id}/rotate`, payload });

  async function nodeKey(name: string, octet: number): Promise<{ id: string; secret: string }> {
    const created = await t.call(t.rootKey, {
      method: "POST",
      url: "/v1/speakers",
      payload: { name, mode: "remote", router_id: `192.0.2.${octet}`, asn: 65000 + octet, policies_json: { local_ip: `192.0.2.${octet}` } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const enrolled = await t.call(created.json().enrollment_token, {
      method: "POST",
      url: "/v1/nodes/enroll",
      payload: { hostname: name, agent_version: "1.0.0" },
    });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    const secret = enrolled.json().api_key as string;
    const keys = (await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?role=node&limit=500" })).json().items;
    const row = keys.find((k: { key_prefix: string }) => secret.startsWith(`rlk_${k.key_prefix}_`));
    return { id: row.id, secret };
  }

  it("an operator cannot rotate, change or revoke another operator's key", async () => {
    const me = await mintKey(t.rootKey, "operator");
    const other = await mintKey(t.rootKey, "operator");
    const res = await rotate(me.secret, other.id);
    expect(res.statusCode).toBe(403);
    expect(res.body).not.toContain("rlk_");
    expect((await t.call(me.secret, { method: "PATCH", url: `/v1/api-keys/${other.id}`, payload: { name: "mine" } })).statusCode).toBe(403);
    expect((await t.call(me.secret, { method: "DELETE", url: `/v1/api-keys/${other.id}` })).statusCode).toBe(403);
    expect(await session(other.secret)).toBe(200);
  });

  it("an operator cannot touch a speaker's node key; an admin rotates it to a new secret, with the grace asked for", async () => {
    const node = await nodeKey("keys-edge", 31);
    const op = await mintKey(t.rootKey, "operator");
    const byOperator = await rotate(op.secret, node.id);
    expect(byOperator.statusCode).toBe(403);
    expect(byOperator.body).not.toContain("rlk_");
    expect((await t.call(op.secret, { method: "PATCH", url: `/v1/api-keys/${node.id}`, payload: { name: "mine" } })).statusCode).toBe(403);
    expect((await t.call(op.secret, { method: "DELETE", url: `/v1/api-keys/${node.id}` })).statusCode).toBe(403);
    expect((await t.call(node.secret, { method: "GET", url: "/v1/nodes/signing-keys" })).statusCode).toBe(200);

    const admin = await mintKey(t.rootKey, "admin");
    const byAdmin = await rotate(admin.secret, node.id, { grace_seconds: 3600 });
    expect(byAdmin.statusCode, byAdmin.body).toBe(200);
    expect(byAdmin.json()).toMatchObject({ id: node.id, role: "node", revoked_at: null });
    const fresh = byAdmin.json().secret as string;
    expect(fresh).toMatch(/^rlk_/);
    expect(fresh).not.toBe(node.secret);
    // Both secrets work through the grace period: the router keeps going until it is handed the new one.
    for (const secret of [node.secret, fresh]) expect((await t.call(secret, { method: "GET", url: "/v1/nodes/signing-keys" })).statusCode).toBe(200);
    expect((await t.call(admin.secret, { method: "DELETE", url: `/v1/api-keys/${node.id}` })).statusCode).toBe(204);
    expect((await t.call(fresh, { method: "GET", url: "/v1/nodes/signing-keys" })).statusCode).toBe(401);
  });

  it("a key that outranks another rotates it to a new secret, audited as a rotation; your own key rotates", async () => {
    const admin = await mintKey(t.rootKey, "admin");
    const op = await mintKey(admin.secret, "operator");
    const res = await rotate(admin.secret, op.id);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ id: op.id, role: "operator", revoked_at: null, secret: expect.stringMatching(new RegExp(`^rlk_${op.key_prefix}_`)) });
    expect(await session(op.secret)).toBe(401); // no grace asked for: the old secret ends at once
    expect(await session(res.json().secret)).toBe(200);
    const audit = (await t.call(t.rootKey, { method: "GET", url: "/v1/audit?resource_type=api_key&limit=500" })).json().items;
    const record = audit.find((r: { resource_id: string; action: string }) => r.resource_id === op.id && r.action !== "create");
    expect(record).toMatchObject({ action: "rotate", actor: { key_id: admin.id } });
    expect(JSON.stringify(record)).not.toContain(res.json().secret);

    const own = await rotate(admin.secret, admin.id);
    expect(own.statusCode).toBe(200);
    expect(own.json().secret).toMatch(new RegExp(`^rlk_${admin.key_prefix}_`));
    expect(await session(own.json().secret)).toBe(200);
  });

  it("an admin cannot manage another admin; superadmins revoke one another but never rotate one another to a secret", async () => {
    const a1 = await mintKey(t.rootKey, "admin");
    const a2 = await mintKey(t.rootKey, "admin");
    expect((await rotate(a1.secret, a2.id)).statusCode).toBe(403);
    expect((await t.call(a1.secret, { method: "DELETE", url: `/v1/api-keys/${a2.id}` })).statusCode).toBe(403);
    const s1 = await mintKey(t.rootKey, "superadmin");
    const s2 = await mintKey(t.rootKey, "superadmin");
    expect((await t.call(s1.secret, { method: "PATCH", url: `/v1/api-keys/${s2.id}`, payload: { name: "taken" } })).statusCode).toBe(403);
    expect((await rotate(s1.secret, s2.id)).statusCode).toBe(403);
    expect((await t.call(s1.secret, { method: "DELETE", url: `/v1/api-keys/${s2.id}` })).statusCode).toBe(204);
    expect(await session(s2.secret)).toBe(401);
  });
});

describe("API keys - tenants", () => {
  it("another tenant's key id is a 404, never a 403", async () => {
    const created = await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "tenant-b" } });
    expect(created.statusCode).toBe(201);
    const bAdmin = created.json().admin_key.secret as string;
    const aKey = await mintKey(t.rootKey, "viewer");
    for (const [method, url] of [
      ["GET", `/v1/api-keys/${aKey.id}`],
      ["PATCH", `/v1/api-keys/${aKey.id}`],
      ["DELETE", `/v1/api-keys/${aKey.id}`],
      ["POST", `/v1/api-keys/${aKey.id}/rotate`],
    ] as const) {
      const res = await t.call(bAdmin, { method, url, ...(method === "PATCH" ? { payload: { name: "x" } } : {}) });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    const list = await t.call(bAdmin, { method: "GET", url: "/v1/api-keys" });
    expect(list.json().items.map((k: { id: string }) => k.id)).not.toContain(aKey.id);
  });
});

describe("API keys - audit", () => {
  it("records create, update, rotate and revoke without the secret", async () => {
    const k = await mintKey(t.rootKey, "operator", "audited");
    await t.call(t.rootKey, { method: "PATCH", url: `/v1/api-keys/${k.id}`, payload: { name: "audited-2" } });
    expect((await t.call(k.secret, { method: "POST", url: `/v1/api-keys/${k.id}/rotate`, payload: {} })).statusCode).toBe(200);
    await t.call(t.rootKey, { method: "DELETE", url: `/v1/api-keys/${k.id}` });
    const res = await t.call(t.rootKey, { method: "GET", url: "/v1/audit?resource_type=api_key&limit=500" });
    const mine = res.json().items.filter((r: { resource_id: string }) => r.resource_id === k.id);
    expect(mine.map((r: { action: string }) => r.action).sort()).toEqual(["create", "revoke", "rotate", "update"]);
    expect(mine.find((r: { action: string }) => r.action === "update").changes.name).toEqual({ from: "audited", to: "audited-2" });
    expect(res.body).not.toContain(k.secret);
    const revoke = mine.find((r: { action: string }) => r.action === "revoke");
    expect(revoke.severity).toBe("warning");
    expect(revoke.actor.role).toBe("superadmin");
  });
});
