import { mkdtempSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spkiHash } from "@rlc/shared";
import { verifyBundle } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcCredentialsFor } from "../../packages/agent/src/agent.js";
import { AgentGrpcClient } from "../../packages/agent/src/bundle/grpc-client.js";
import { ControllerHttpClient } from "../../packages/agent/src/bundle/http-client.js";
import { pinnedFetch } from "../../packages/agent/src/bundle/pinning.js";
import { loadConfig } from "../../packages/agent/src/config.js";
import { enroll, enrollmentSettings } from "../../packages/agent/src/enroll.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { StateStore } from "../../packages/agent/src/state.js";
import { loadAgentService } from "../../packages/proto/src/index.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

// A controller started as by default (plain HTTP API, its own CA for the agents) serves the
// agents' node routes over HTTPS with the gRPC certificate: an agent configured with only
// RL_CONTROLLER_URL=https://… and its enrollment token (no RL_INSECURE) enrolls, fetches,
// reports and reaches gRPC with the one pin the token carries, and refuses a listener whose
// certificate the pin does not name.

let t: TestController;
let nodeUrl: string;
let dir: string;
const call = (key: string, method: "GET" | "POST", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });

beforeAll(async () => {
  t = await startTestController({
    env: { GRPC_HOST: "127.0.0.1", GRPC_PORT: "0", NODE_HTTPS_HOST: "127.0.0.1", NODE_HTTPS_PORT: "0" },
    start: { grpc: true, nodeHttps: true },
  });
  nodeUrl = `https://127.0.0.1:${t.controller.nodeHttps!.port}`;
  dir = mkdtempSync(join(tmpdir(), "rl-node-https-"));
}, 120_000);
afterAll(async () => {
  await t?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const newSpeaker = async (name: string) =>
  (await call(t.rootKey, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.1", asn: 65010 })).json() as {
    id: string;
    enrollment_token: string;
  };
const stateIn = async (name: string) => {
  const state = new StateStore(join(dir, name));
  await state.init();
  return state;
};

/** A request on the listener that trusts nothing (the test looks at what it answers, not who it is). */
function raw(method: string, path: string, key: string): Promise<{ status: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${nodeUrl}${path}`, { method, rejectUnauthorized: false, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let body = "";
      res.on("data", (c: Buffer) => {
        body += c.toString();
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, type: String(res.headers["content-type"] ?? ""), body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the agents' HTTPS listener", () => {
  it("an agent with only RL_CONTROLLER_URL (https) and its token enrolls, fetches, reports and reaches gRPC, all under the token's pin", async () => {
    const speaker = await newSpeaker("edge-https");
    const config = loadConfig({ RL_CONTROLLER_URL: nodeUrl, RL_ENROLLMENT_TOKEN: speaker.enrollment_token, RL_STATE_DIR: join(dir, "agent") });
    expect(config.insecure).toBe(false);
    const state = await stateIn("agent");
    const { token, ...settings } = enrollmentSettings(config);
    const node = await enroll({ ...settings, token: token!, state, hostname: "r1", agentVersion: "1.0.0", now: Date.now });
    expect(node.speaker_id).toBe(speaker.id);
    // The pin of the token names the CA the gRPC listener presents too.
    const pin = `sha256:${speaker.enrollment_token.split(".").at(-1)}`;
    expect(spkiHash(node.controller_ca_pem!)).toBe(pin);

    // A revision applied to the speaker, taken as the agent takes it: over HTTPS, pinned.
    const community = (await call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
    const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
    await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
    const revisionId = (await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
    await call(t.rootKey, "POST", "/v1/apply", { speaker_ids: [speaker.id], timeout_seconds: 5 });
    const http = new ControllerHttpClient({ baseUrl: nodeUrl, nodeKey: node.api_key, fetch: pinnedFetch(node.controller_ca_pem!) });
    await until("the desired revision", async () => (await http.latest(speaker.id)) !== null);
    expect(await http.latest(speaker.id)).toMatchObject({ revision_id: revisionId });
    const keys = await http.signingKeys();
    const received = await http.fetchBundle(speaker.id, revisionId, { maxBytes: 64 * 1024 * 1024 });
    const verified = await verifyBundle(
      received.bytes,
      keys.map((k) => ({ ...k, alg: "ed25519" as const })),
      { speakerId: speaker.id, tenantId: node.tenant_id, lastSequence: null, now: new Date() },
    );
    expect(verified.payload.prefixes).toEqual({ v4: [["11.0.0.0/16", ["65000:100"]]], v6: [] });
    await http.health(5000);
    await http.reportStatus({
      speaker_id: speaker.id,
      reason: "applied",
      applied_revision_id: revisionId,
      applied_sequence: verified.payload.sequence,
      applied_digest: verified.payload.digest,
      applied_at: new Date().toISOString(),
      error: null,
      bird: null,
      sessions: [],
      agent_version: "1.0.0",
      reported_at: new Date().toISOString(),
    } as never);
    await until("the report", async () => (await call(t.rootKey, "GET", `/v1/speakers/${speaker.id}`)).json().applied_revision_id === revisionId);

    // gRPC with the same pinned CA (the endpoint named at enrollment).
    const credentials = await grpcCredentialsFor(config, node);
    const grpc = new AgentGrpcClient({
      address: t.controller.grpc!.address,
      credentials: credentials!,
      nodeKey: node.api_key,
      speakerId: speaker.id,
      service: loadAgentService(),
      clock: createSystemClock(),
      log: silentLogger,
    });
    try {
      const overGrpc = await grpc.fetchBundle(revisionId, { maxBytes: 64 * 1024 * 1024, timeoutMs: 10_000 });
      expect(Buffer.from(overGrpc.bytes).equals(Buffer.from(received.bytes))).toBe(true);
    } finally {
      grpc.close();
    }
  });

  it("an agent whose token pins another CA refuses the listener before sending the token, which stays unspent", async () => {
    const speaker = await newSpeaker("edge-wrong-pin");
    const [secret] = speaker.enrollment_token.split(".");
    const wrong = `${secret}.${"ab".repeat(32)}`;
    const config = loadConfig({ RL_CONTROLLER_URL: nodeUrl, RL_ENROLLMENT_TOKEN: wrong, RL_STATE_DIR: join(dir, "wrong") });
    const { token, ...settings } = enrollmentSettings(config);
    await expect(enroll({ ...settings, token: token!, state: await stateIn("wrong"), hostname: "r1", agentVersion: "1", now: Date.now })).rejects.toMatchObject(
      {
        code: "untrusted_controller",
      },
    );
    expect((await call(t.rootKey, "GET", `/v1/speakers/${speaker.id}`)).json().enrolled_at).toBeNull();
  });

  it("serves the node routes and the health check only: the rest of the API, in any spelling, is a 404 there", async () => {
    expect((await raw("GET", "/v1/health", t.rootKey)).status).toBe(200);
    for (const path of ["/v1/modules", "/v1/api-keys", "/v1//nodes/signing-keys", "/v1/nodes/signing-keys/", "/v1/%6eodes/signing-keys", "/docs", "/metrics"]) {
      const answer = await raw("GET", path, t.rootKey);
      expect(answer.status, path).toBe(404);
      expect(answer.type, path).toContain("application/problem+json");
    }
    expect((await raw("POST", "/v1/nodes/signing-keys/rotate", t.rootKey)).status).toBe(404);
    // A node route still checks its key as on the API's port.
    expect((await raw("GET", "/v1/nodes/signing-keys", "rlk_AAAAAAAA_nope")).status).toBe(401);
    expect((await raw("GET", "/v1/nodes/signing-keys", t.rootKey)).status).toBe(200);
  });
});
