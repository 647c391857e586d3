import { announcementToProto } from "@rlc/proto";
import { BUNDLE_FORMAT_V2, CURRENT_ANNOUNCEMENT, isBundleV2, verifyBundle } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AgentServiceClient } from "../../packages/proto/src/index.js";
import { AGENT_HEADERS, agentClient, getBundle, watch } from "../helpers/agent-grpc.js";
import { type LiveController, startLiveController, until } from "../helpers/live-controller.js";

// Upgrades in either order (issue 25): each agent is served the newest bundle format it
// announced, rl-bundle/1 (and no feature) when it announced nothing, and the speaker says so.

let t: LiveController;
let client: AgentServiceClient;
let revisionId: number;

interface Enrolled {
  id: string;
  key: string;
  tenant: string;
  keys: { key_id: string; public_key: string }[];
}

/** A speaker enrolled over HTTP, by an agent sending `headers` (none: an agent of the release before). */
async function enrolled(name: string, headers: Record<string, string>): Promise<Enrolled> {
  const speaker = (await t.call(t.rootKey, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.7", asn: 65007 })).json();
  const res = await t.controller.app.inject({
    method: "POST",
    url: "/v1/nodes/enroll",
    headers: { authorization: `Bearer ${speaker.enrollment_token}`, ...headers },
    payload: { hostname: `${name}.example`, agent_version: "1.0.0" },
  });
  expect(res.statusCode, res.body).toBe(201);
  const body = res.json();
  return { id: speaker.id, key: body.api_key, tenant: body.tenant_id, keys: body.signing_keys };
}

async function applyForced(s: Enrolled) {
  const apply = await t.call(t.rootKey, "POST", "/v1/apply", { speaker_ids: [s.id], timeout_seconds: 20, force_confirm: true });
  expect(apply.statusCode, apply.body).toBe(202);
  await until("the bundle to be issued", async () => (await t.call(s.key, "GET", `/v1/speakers/${s.id}/revisions/latest`)).statusCode === 200);
}

const bundleOver = (s: Enrolled, headers: Record<string, string>, query = "") =>
  t.controller.app.inject({
    method: "GET",
    url: `/v1/speakers/${s.id}/bundle/${revisionId}${query}`,
    headers: { authorization: `Bearer ${s.key}`, ...headers },
  });
const served = async (format: string) => {
  const text = (await t.call(null, "GET", "/metrics")).body;
  return Number(new RegExp(`^rlc_bundles_served_total\\{format="${format.replace("/", "\\/")}"\\} (\\d+)`, "m").exec(text)?.[1] ?? Number.NaN);
};
const speakerOf = async (s: Enrolled) => (await t.call(t.rootKey, "GET", `/v1/speakers/${s.id}`)).json();

beforeAll(async () => {
  t = await startLiveController();
  client = agentClient(t.grpcAddress, t.grpcCredentials);
  const community = (await t.call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
  const mod = (await t.call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
  await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
  const refreshed = await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
  expect(refreshed.statusCode, refreshed.body).toBe(200);
  revisionId = refreshed.json().result.revision_id;
});

afterAll(async () => {
  client?.close();
  await t?.close();
});

describe("bundle formats by what the agent announces", () => {
  it("an agent that announces nothing gets rl-bundle/1 over HTTP and gRPC, without force_confirm; the speaker warns it is old, the metric counts it", async () => {
    const s = await enrolled("edge-old", {});
    await applyForced(s);
    const before = await served("rl-bundle/1");

    const http = await bundleOver(s, {});
    expect(http.statusCode, http.body).toBe(200);
    expect(http.headers["content-type"]).toMatch(/^application\/json/);
    expect(http.json()).toMatchObject({ format: "rl-bundle/1", alg: "ed25519" });
    const opts = { speakerId: s.id, tenantId: s.tenant, lastSequence: null, now: new Date() };
    const verified = await verifyBundle(http.rawPayload, s.keys, opts);
    expect(verified.payload).toMatchObject({ revision_id: revisionId, sequence: 1, prefixes: { v4: [["11.0.0.0/16", ["65000:100"]]], v6: [] } });
    // A feature it did not announce is left out (the digest covers what is sent).
    expect(verified.payload.force_confirm).toBeUndefined();

    const chunks = await getBundle(client, s.key, s.id, revisionId, 0, null);
    const grpcBytes = Buffer.concat(chunks.map((c) => c.data));
    expect(isBundleV2(grpcBytes)).toBe(false);
    expect(chunks[0]!.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((await verifyBundle(grpcBytes, s.keys, opts)).payload.digest).toBe(verified.payload.digest);
    expect(await served("rl-bundle/1")).toBe(before + 2);

    const row = await speakerOf(s);
    expect(row.agent_accepts).toBeNull();
    expect(row.warnings).toEqual([expect.objectContaining({ code: "agent_outdated" })]);

    // Once it reports running that bundle, the desired revision names it by the digest it knows:
    // restarted, it finds itself up to date instead of fetching again.
    const report = await t.call(s.key, "POST", `/v1/speakers/${s.id}/status`, {
      speaker_id: s.id,
      reason: "applied",
      applied_revision_id: revisionId,
      applied_sequence: 1,
      applied_digest: verified.payload.digest,
      applied_at: new Date().toISOString(),
    });
    expect(report.statusCode, report.body).toBe(204);
    expect((await t.call(s.key, "GET", `/v1/speakers/${s.id}/revisions/latest`)).json().digest).toBe(verified.payload.digest);
    const w = watch(client, s.key);
    expect(await w.next(() => true)).toMatchObject({ type: "WATCH_EVENT_TYPE_NEW_REVISION", digest: verified.payload.digest });
    w.cancel();
  });

  it("an agent that announces rl-bundle/2 and its features gets rl-bundle/2 with force_confirm, and no warning", async () => {
    const s = await enrolled("edge-new", AGENT_HEADERS);
    await applyForced(s);
    const http = await bundleOver(s, AGENT_HEADERS);
    expect(http.statusCode, http.body).toBe(200);
    expect(http.rawPayload.subarray(0, BUNDLE_FORMAT_V2.length).toString()).toBe(BUNDLE_FORMAT_V2);
    const opts = { speakerId: s.id, tenantId: s.tenant, lastSequence: null, now: new Date() };
    expect((await verifyBundle(http.rawPayload, s.keys, opts)).payload.force_confirm).toBe(true);
    const grpcBytes = Buffer.concat((await getBundle(client, s.key, s.id, revisionId)).map((c) => c.data));
    expect(isBundleV2(grpcBytes)).toBe(true);

    const row = await speakerOf(s);
    expect(row.agent_accepts).toEqual(CURRENT_ANNOUNCEMENT);
    expect(row.warnings).toEqual([]);
  });

  it("the speaker follows its agent: a Watch without an announcement (a downgrade) warns, one with it clears the warning", async () => {
    const s = await enrolled("edge-moves", AGENT_HEADERS);
    const old = watch(client, s.key);
    await old.next(() => true);
    old.cancel();
    expect((await speakerOf(s)).warnings).toEqual([expect.objectContaining({ code: "agent_outdated" })]);
    const current = watch(client, s.key, announcementToProto(CURRENT_ANNOUNCEMENT));
    await current.next(() => true);
    current.cancel();
    expect(await speakerOf(s)).toMatchObject({ agent_accepts: CURRENT_ANNOUNCEMENT, warnings: [] });
  });
});
