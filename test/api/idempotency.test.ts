import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

const countKeys = async (name: string) => {
  const res = await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?limit=500" });
  return res.json().items.filter((k: { name: string }) => k.name === name).length;
};

describe("Idempotency-Key", () => {
  it("100 concurrent POSTs with one key create exactly one key; every answer is the same 201 or a 409", async () => {
    const payload = { name: "concurrent", role: "viewer" };
    const answers = await Promise.all(
      Array.from({ length: 100 }, () => t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload, headers: { "idempotency-key": "burst-1" } })),
    );
    const created = answers.filter((a) => a.statusCode === 201);
    const inFlight = answers.filter((a) => a.statusCode === 409);
    expect(created.length + inFlight.length).toBe(100);
    expect(created.length).toBeGreaterThanOrEqual(1);
    expect(new Set(created.map((a) => a.body)).size).toBe(1);
    for (const a of inFlight) expect(a.json().code).toBe("idempotency_in_flight");
    expect(await countKeys("concurrent")).toBe(1);
    // Afterwards, the same request replays the stored answer, marked as a replay.
    const again = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload, headers: { "idempotency-key": "burst-1" } });
    expect(again.statusCode).toBe(201);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.body).toBe(created[0]!.body);
    expect(await countKeys("concurrent")).toBe(1);
  });

  it("the same key with another body is a 422 and changes nothing", async () => {
    const h = { "idempotency-key": "reuse-1" };
    const first = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "reuse", role: "viewer" }, headers: h });
    expect(first.statusCode).toBe(201);
    const second = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "reuse", role: "operator" }, headers: h });
    expect(second.statusCode).toBe(422);
    expect(second.json().code).toBe("idempotency_key_reused");
    const otherPath = await t.call(t.rootKey, { method: "PATCH", url: `/v1/api-keys/${first.json().id}`, payload: { name: "z" }, headers: h });
    expect(otherPath.statusCode).toBe(422);
    expect(await countKeys("reuse")).toBe(1);
  });

  it("a failed request stores nothing, so the corrected retry with the same key works", async () => {
    const h = { "idempotency-key": "fix-1" };
    const bad = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "", role: "viewer" }, headers: h });
    expect(bad.statusCode).toBe(400);
    const forbidden = await t.call(t.rootKey, {
      method: "PATCH",
      url: "/v1/api-keys/00000000-0000-7000-8000-000000000000",
      payload: { name: "x" },
      headers: h,
    });
    expect(forbidden.statusCode).toBe(404);
    const good = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "fixed", role: "viewer" }, headers: h });
    expect(good.statusCode).toBe(201);
    expect(good.headers["idempotent-replayed"]).toBeUndefined();
  });

  it("keys are scoped to the tenant", async () => {
    const tenant = await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "idem-other" } });
    const other = tenant.json().admin_key.secret as string;
    const h = { "idempotency-key": "shared-name" };
    const a = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "scoped", role: "viewer" }, headers: h });
    const b = await t.call(other, { method: "POST", url: "/v1/api-keys", payload: { name: "scoped", role: "viewer" }, headers: h });
    expect(a.statusCode).toBe(201);
    expect(b.statusCode).toBe(201);
    expect(b.headers["idempotent-replayed"]).toBeUndefined();
    expect(a.json().tenant_id).not.toBe(b.json().tenant_id);
  });

  it("a replayed DELETE answers 204 again without a second audit record", async () => {
    const k = (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "gone", role: "viewer" } })).json();
    const h = { "idempotency-key": "del-1" };
    expect((await t.call(t.rootKey, { method: "DELETE", url: `/v1/api-keys/${k.id}`, headers: h })).statusCode).toBe(204);
    const again = await t.call(t.rootKey, { method: "DELETE", url: `/v1/api-keys/${k.id}`, headers: h });
    expect(again.statusCode).toBe(204);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    const audit = await t.call(t.rootKey, { method: "GET", url: "/v1/audit?action=revoke&limit=500" });
    expect(audit.json().items.filter((r: { resource_id: string }) => r.resource_id === k.id)).toHaveLength(1);
  });

  it("refuses a malformed key", async () => {
    const res = await t.call(t.rootKey, {
      method: "POST",
      url: "/v1/api-keys",
      payload: { name: "x", role: "viewer" },
      headers: { "idempotency-key": "a".repeat(256) },
    });
    expect(res.statusCode).toBe(400);
  });
});
