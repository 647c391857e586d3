import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("settings", () => {
  it("starts empty and takes a merge patch; null deletes; unknown keys are kept", async () => {
    const empty = await t.call(t.rootKey, { method: "GET", url: "/v1/settings" });
    expect(empty.json()).toEqual({ settings: {}, updated_at: null });
    const first = await t.call(t.rootKey, {
      method: "PATCH",
      url: "/v1/settings",
      payload: { BIRD: { bird_bgp_source_ipv4: "192.0.2.1", local_asn: 65000 }, revision_retention_minutes: 60, team: { owner: "noc" } },
    });
    expect(first.statusCode).toBe(200);
    const second = await t.call(t.rootKey, {
      method: "PATCH",
      url: "/v1/settings",
      headers: { "content-type": "application/merge-patch+json" },
      payload: JSON.stringify({ BIRD: { local_asn: null, router_id: "192.0.2.9" }, team: null }),
    });
    expect(second.statusCode).toBe(200);
    expect(second.json().settings).toEqual({ BIRD: { bird_bgp_source_ipv4: "192.0.2.1", router_id: "192.0.2.9" }, revision_retention_minutes: 60 });
    expect(second.json().updated_at).not.toBeNull();
  });

  it("validates known keys and keeps the old value when one is wrong", async () => {
    const bad = await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { BIRD: { bird_bgp_source_ipv4: "not-an-ip" }, revision_retention_minutes: -1 } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors.map((e: { path: string }) => e.path).sort()).toEqual(["body.BIRD.bird_bgp_source_ipv4", "body.revision_retention_minutes"]);
    const now = await t.call(t.rootKey, { method: "GET", url: "/v1/settings" });
    expect(now.json().settings.revision_retention_minutes).toBe(60);
  });

  it("a viewer reads but cannot patch", async () => {
    const viewer = (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "v", role: "viewer" } })).json().secret;
    expect((await t.call(viewer, { method: "GET", url: "/v1/settings" })).statusCode).toBe(200);
    expect((await t.call(viewer, { method: "PATCH", url: "/v1/settings", payload: { x: 1 } })).statusCode).toBe(403);
  });

  it("every change is audited with what changed", async () => {
    await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { revision_guard_max_drop_percent: 20 } });
    const audit = await t.call(t.rootKey, { method: "GET", url: "/v1/audit?resource_type=settings" });
    const latest = audit.json().items[0];
    expect(latest).toMatchObject({ action: "update", resource_type: "settings" });
    expect(latest.changes.revision_guard_max_drop_percent).toEqual({ from: null, to: 20 });
    expect(audit.json().items.length).toBe(3);
  });
});
