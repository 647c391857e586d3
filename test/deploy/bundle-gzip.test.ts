import { randomBytes } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// Bundles reach 128 MiB; compressing one on the event loop held every other request (health
// checks included) for the whole compression. Timing on a shared machine is noisy, so the test
// compares the event loop's longest stall during a gzip'd download with how long the same
// compression takes when done synchronously, measured in the same run.

let t: TestController;
beforeAll(async () => {
  t = await startTestController();
}, 60_000);
afterAll(async () => t?.close());

describe("bundle download with Accept-Encoding: gzip", () => {
  it("compresses off the event loop: /v1/health keeps answering meanwhile", async () => {
    const created = (await t.call(t.rootKey, { method: "POST", url: "/v1/speakers", payload: { name: "big", router_id: "192.0.2.31", asn: 65040 } })).json();
    const enrolled = (await t.call(created.enrollment_token, { method: "POST", url: "/v1/nodes/enroll", payload: { hostname: "big", agent_version: "1" } })).json();
    // Poorly compressible text, like a bundle's base64 payload.
    const bytes = Buffer.from(randomBytes(18 * 1024 * 1024).toString("base64"));
    // The stored bytes come from memory here, so what the loop measures is the compression
    // (reading a large bytea has its own cost, which is not what this test is about).
    const node = t.controller.deps.services.node;
    node.bundle = async () => bytes;

    const started = performance.now();
    gzipSync(bytes, { level: 1 });
    const syncMs = performance.now() - started;

    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    let done = false;
    const download = t.controller.app
      .inject({ method: "GET", url: `/v1/speakers/${enrolled.speaker_id}/bundle/1`, headers: { authorization: `Bearer ${enrolled.api_key}`, "accept-encoding": "gzip" } })
      .finally(() => {
        done = true;
      });
    let healthAnswers = 0;
    while (!done) {
      const health = await t.controller.app.inject({ method: "GET", url: "/v1/health" });
      if (health.statusCode === 200) healthAnswers++;
      await new Promise((r) => setTimeout(r, 5));
    }
    delay.disable();
    const res = await download;
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(res.rawPayload).equals(bytes)).toBe(true);

    const maxStallMs = delay.max / 1e6;
    expect(healthAnswers).toBeGreaterThan(1);
    expect(maxStallMs, `longest stall ${maxStallMs.toFixed(0)} ms; synchronous gzip ${syncMs.toFixed(0)} ms`).toBeLessThan(syncMs / 3);
  }, 60_000);
});
