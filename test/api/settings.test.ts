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
    const bad = await t.call(t.rootKey, {
      method: "PATCH",
      url: "/v1/settings",
      payload: { BIRD: { bird_bgp_source_ipv4: "not-an-ip" }, revision_retention_minutes: -1 },
    });
    expect(bad.statusCode).toBe(400);
    expect(
      bad
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(["body.BIRD.bird_bgp_source_ipv4", "body.revision_retention_minutes"]);
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
  it("BIRD probation: confirm_after_seconds 0..300 and probation_check_controller boolean; the configure timeout must outlast the window by 5 s", async () => {
    const patch = (BIRD: Record<string, unknown>) => t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { BIRD } });
    const good = await patch({ confirm_after_seconds: 20, configure_timeout_seconds: 25, probation_check_controller: false });
    expect(good.statusCode).toBe(200);
    expect(good.json().settings.BIRD).toMatchObject({ confirm_after_seconds: 20, configure_timeout_seconds: 25, probation_check_controller: false });

    const tooShort = await patch({ configure_timeout_seconds: 24 });
    expect(tooShort.statusCode).toBe(400);
    expect(tooShort.json().errors).toEqual([
      { path: "body.BIRD.configure_timeout_seconds", message: expect.stringContaining("must be at least confirm_after_seconds (20) + 5") },
    ]);
    // Without a timeout of its own the agent's default (30 s) counts.
    await patch({ configure_timeout_seconds: null, confirm_after_seconds: null });
    expect((await patch({ confirm_after_seconds: 26 })).json().errors).toEqual([
      { path: "body.BIRD.confirm_after_seconds", message: expect.stringContaining("configure_timeout_seconds (30)") },
    ]);
    expect((await patch({ confirm_after_seconds: 25 })).statusCode).toBe(200);
    expect((await patch({ confirm_after_seconds: 301, configure_timeout_seconds: 3600 })).statusCode).toBe(400);
    expect((await patch({ probation_check_controller: "no" })).statusCode).toBe(400);
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/settings" })).json().settings.BIRD).toMatchObject({
      confirm_after_seconds: 25,
      probation_check_controller: false,
    });
  });

  it("keys the controller does not know take at most 64 KiB together: a patch past it is 413 payload_too_large and changes nothing", async () => {
    const chunk = "x".repeat(20 * 1024);
    for (const key of ["notes_a", "notes_b", "notes_c"]) {
      const res = await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { [key]: chunk } });
      expect(res.statusCode, res.body).toBe(200);
    }
    const before = (await t.call(t.rootKey, { method: "GET", url: "/v1/settings" })).json();
    const over = await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { notes_d: chunk, revision_retention_minutes: 5 } });
    expect(over.statusCode, over.body).toBe(413);
    expect(over.headers["content-type"]).toContain("application/problem+json");
    expect(over.json()).toMatchObject({ code: "payload_too_large", max_unknown_keys_bytes: 65536 });
    expect(over.json().unknown_keys_bytes).toBeGreaterThan(65536);
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/settings" })).json()).toEqual(before);
    // Making room is always possible, and known keys are bounded by their own rules rather than the unknown keys' cap.
    const room = await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { notes_a: null, notes_b: null, notes_c: null } });
    expect(room.statusCode, room.body).toBe(200);
    const prefixes = Array.from({ length: 5000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
    const big = await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { BIRD: { exclude_prefixes: prefixes } } });
    expect(big.statusCode, big.body.slice(0, 200)).toBe(200);
    await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { BIRD: { exclude_prefixes: null } } });
  });

  it("the whole document takes at most 1 MiB, unknown members of BIRD included", async () => {
    const chunk = "y".repeat(400 * 1024);
    expect((await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { BIRD: { notes_1: chunk } } })).statusCode).toBe(200);
    expect((await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { BIRD: { notes_2: chunk } } })).statusCode).toBe(200);
    const over = await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { BIRD: { notes_3: chunk } } });
    expect(over.statusCode, over.body.slice(0, 200)).toBe(413);
    expect(over.json()).toMatchObject({ code: "payload_too_large", max_bytes: 1048576 });
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/settings" })).json().settings.BIRD).not.toHaveProperty("notes_3");
  });
});
