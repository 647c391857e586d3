import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// The state between `POST /v1/speakers` and installing the agent: speakers that never answer.
// On the embedded database (one connection) the first apply used to open a second transaction
// inside its own, and every request that touched the database hung from then on.
let t: TestController;
const call = (method: "GET" | "POST", url: string, payload?: object) => t.call(t.rootKey, { method, url, ...(payload ? { payload } : {}) });

/**
 * The answer, or a failure naming the route. A frozen controller never answers; 20 s is far
 * beyond any answer here, even on a loaded machine, so only a freeze trips it.
 */
async function answered(method: "GET" | "POST", url: string, payload?: object) {
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${method} ${url} did not answer within 20 s`)), 20_000);
  });
  try {
    return await Promise.race([call(method, url, payload), hang]);
  } finally {
    clearTimeout(timer);
  }
}

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("a peer on a speaker without an agent", () => {
  it("starts an apply that waits for the agent while every other request still answers", async () => {
    const mod = (await answered("POST", "/v1/modules", { name: "ranges", type: "IP_RANGES" })).json();
    await answered("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
    expect((await answered("POST", `/v1/modules/${mod.id}/refresh?wait=true`)).statusCode).toBe(200);
    const speakers = [];
    for (const n of [1, 2]) {
      speakers.push((await answered("POST", "/v1/speakers", { name: `edge-${n}`, mode: "remote", router_id: `192.0.2.${n}`, asn: 65010 + n })).json());
    }
    const peer = await answered("POST", "/v1/peers", {
      name: "upstream",
      neighbor_address: "192.0.2.9",
      remote_asn: 65002,
      speaker_ids: speakers.map((s) => s.id),
    });
    expect(peer.statusCode, peer.body).toBe(201);

    // The reconcile runs, queues an apply, and the apply issues bundles and starts waiting.
    let applyJobId: string | null = null;
    for (let i = 0; i < 100 && !applyJobId; i++) {
      const reconcile = (await answered("GET", `/v1/jobs/${peer.json().reconcile_job_id}`)).json();
      applyJobId = reconcile.result?.apply_job_id ?? null;
      if (!applyJobId) await new Promise((r) => setTimeout(r, 100));
    }
    expect(applyJobId).not.toBeNull();
    for (let i = 0; i < 100; i++) {
      const s = (await answered("GET", `/v1/speakers/${speakers[0].id}`)).json();
      if (s.dispatch_status === "dispatched") break;
      await new Promise((r) => setTimeout(r, 100));
    }

    // While the apply waits, the rest of the API answers.
    expect((await answered("GET", "/v1/jobs")).statusCode).toBe(200);
    expect((await answered("GET", "/v1/settings")).statusCode).toBe(200);
    expect((await answered("POST", "/v1/speakers", { name: "edge-3", mode: "remote", router_id: "192.0.2.3", asn: 65013 })).statusCode).toBe(201);
    const s1 = (await answered("GET", `/v1/speakers/${speakers[0].id}`)).json();
    expect(s1).toMatchObject({ dispatch_status: "dispatched", sync_status: "unknown" }); // no report yet
    expect(s1.desired_revision_id).not.toBeNull();
    expect((await answered("GET", "/v1/nodes/signing-keys")).json().keys).toHaveLength(1);
  }, 180_000);
});
