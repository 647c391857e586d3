import { randomBytes } from "node:crypto";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { gunzipSync, gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_HEADERS } from "../helpers/agent-grpc.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// Bundles reach 128 MiB; compressing one on the event loop held every other request (health
// checks included) for the whole compression. Timing on a shared machine is noisy, so the test
// compares the event loop's longest stall during a gzip'd download with how long the same
// compression takes when done synchronously, measured in the same run.

let t: TestController;
let base: string;
beforeAll(async () => {
  t = await startTestController();
  await t.controller.app.listen({ host: "127.0.0.1", port: 0 });
  base = `http://127.0.0.1:${(t.controller.app.server.address() as AddressInfo).port}`;
}, 60_000);
afterAll(async () => t?.close());

/** The raw body, as sent (no decompression on the client side). */
function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("bundle download with Accept-Encoding: gzip", () => {
  it("compresses off the event loop: /v1/health keeps answering meanwhile", async () => {
    const created = (await t.call(t.rootKey, { method: "POST", url: "/v1/speakers", payload: { name: "big", router_id: "192.0.2.31", asn: 65040 } })).json();
    const enrolled = (
      await t.call(created.enrollment_token, { method: "POST", url: "/v1/nodes/enroll", payload: { hostname: "big", agent_version: "1" } })
    ).json();
    // Poorly compressible text, like a bundle's base64 payload.
    const bytes = Buffer.from(randomBytes(12 * 1024 * 1024).toString("base64"));
    // The stored bytes come from memory here, so what the loop measures is the compression
    // (reading a large bytea has its own cost, which is not what this test is about).
    t.controller.deps.services.node.bundleReader = async () => ({
      revision_id: 1,
      sequence: "1",
      size: bytes.length,
      sha256: null,
      delta: false,
      parts: null,
      read: async (offset: number, length: number) => bytes.subarray(offset, offset + length),
    });

    const started = performance.now();
    gzipSync(bytes, { level: 1 });
    const syncMs = performance.now() - started;

    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    // The histogram's first sample only starts its clock: a stall right after enable() is not seen.
    await sleep(50);
    let done = false;
    const download = get(`${base}/v1/speakers/${enrolled.speaker_id}/bundle/1`, {
      authorization: `Bearer ${enrolled.api_key}`,
      "accept-encoding": "gzip",
      ...AGENT_HEADERS,
    }).finally(() => {
      done = true;
    });
    let healthAnswers = 0;
    while (!done) {
      if ((await get(`${base}/v1/health`)).status === 200) healthAnswers++;
      await sleep(5);
    }
    // A stall is recorded by the first sample after it: give the histogram time to take one.
    await sleep(100);
    delay.disable();
    const res = await download;
    expect(res.status).toBe(200);
    expect(res.headers["content-encoding"]).toBe("gzip");
    expect(gunzipSync(res.body).equals(bytes)).toBe(true);

    const maxStallMs = delay.max / 1e6;
    expect(healthAnswers).toBeGreaterThan(1);
    expect(maxStallMs, `longest stall ${maxStallMs.toFixed(0)} ms; synchronous gzip ${syncMs.toFixed(0)} ms`).toBeLessThan(syncMs / 3);
  }, 60_000);
});
