import { verifyBundle, verifyKeyStatement } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_HEADERS } from "../helpers/agent-grpc.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { untilJobDone } from "../helpers/wait.js";

let t: TestController;
const call = (key: string | null, method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) =>
  t.call(key, { method, url, ...(payload ? { payload } : {}) });

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("speakers, enrollment, bundles and apply over HTTP (the agent's side played by the test)", () => {
  let speakerId: string;
  let nodeKey: string;
  let tenantId: string;
  let pinned: { key_id: string; public_key: string; status: "active" | "retired" }[];

  it("a remote speaker enrolls once with its token and gets a node key that reaches only its own routes", async () => {
    const created = await call(t.rootKey, "POST", "/v1/speakers", {
      name: "edge-1",
      mode: "remote",
      router_id: "192.0.2.1",
      asn: 65010,
      policies_json: { local_ip: "192.0.2.1" },
    });
    expect(created.statusCode, created.body).toBe(201);
    speakerId = created.json().speaker_id;
    expect(created.json()).toMatchObject({ id: speakerId, sync_status: "unknown", dispatch_status: "idle", enrolled_at: null });
    const token = created.json().enrollment_token;
    expect(token).toMatch(/^rlt_/);

    const enrolled = await call(token, "POST", "/v1/nodes/enroll", { hostname: "r1.example", agent_version: "1.0.0" });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    nodeKey = enrolled.json().api_key;
    tenantId = enrolled.json().tenant_id;
    pinned = enrolled.json().signing_keys;
    expect(pinned).toEqual([expect.objectContaining({ alg: "ed25519", status: "active", statement: null })]);
    expect((await call(token, "POST", "/v1/nodes/enroll", { hostname: "r1", agent_version: "1" })).statusCode).toBe(401);

    const speaker = (await call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json();
    expect(speaker).toMatchObject({ hostname: "r1.example", agent_version: "1.0.0" });
    expect(speaker.enrolled_at).not.toBeNull();

    const other = (await call(t.rootKey, "POST", "/v1/speakers", { name: "edge-2", router_id: "192.0.2.2", asn: 65011 })).json();
    expect((await call(nodeKey, "GET", `/v1/speakers/${other.id}/revisions/latest`)).statusCode).toBe(404);
    expect((await call(nodeKey, "GET", `/v1/speakers/${speakerId}/revisions/latest`)).statusCode).toBe(404); // nothing desired yet
    expect((await call(nodeKey, "GET", "/v1/modules")).statusCode).toBe(403);
    expect((await call(nodeKey, "GET", "/v1/nodes/signing-keys")).statusCode).toBe(200);
    const audit = (await call(t.rootKey, "GET", "/v1/audit?resource_type=speaker")).json().items;
    expect(audit.some((r: any) => r.resource_id === speakerId && r.action === "update" && /enrolled/.test(r.summary))).toBe(true);
  });

  it("apply signs a bundle the agent verifies, and succeeds when the agent reports it applied", async () => {
    const community = (await call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
    const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
    await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
    await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "2a00:1::/32" });
    const refreshed = await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    const revisionId = refreshed.json().result.revision_id;

    const apply = await call(t.rootKey, "POST", "/v1/apply", { speaker_ids: [speakerId], timeout_seconds: 20 });
    expect(apply.statusCode, apply.body).toBe(202);
    let latest: any;
    for (let i = 0; i < 100; i++) {
      latest = await call(nodeKey, "GET", `/v1/speakers/${speakerId}/revisions/latest`);
      if (latest.statusCode === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(latest.json()).toMatchObject({ speaker_id: speakerId, revision_id: revisionId, sequence: 1 });
    const bundle = await t.app.inject({
      method: "GET",
      url: `/v1/speakers/${speakerId}/bundle/${revisionId}`,
      headers: { authorization: `Bearer ${nodeKey}`, ...AGENT_HEADERS },
    });
    expect(bundle.statusCode).toBe(200);
    const verified = await verifyBundle(
      bundle.rawPayload,
      pinned.map((k) => ({ ...k, alg: "ed25519" as const })),
      { speakerId, tenantId, lastSequence: null, now: new Date() },
    );
    expect(verified.payload.prefixes).toEqual({ v4: [["11.0.0.0/16", ["65000:100"]]], v6: [["2a00:1::/32", ["65000:100"]]] });
    expect(verified.payload.speaker).toMatchObject({ router_id: "192.0.2.1", asn: 65010, policies_json: { local_ip: "192.0.2.1" } });
    expect(verified.payload.digest).toBe(latest.json().digest);
    const gz = await t.app.inject({
      method: "GET",
      url: `/v1/speakers/${speakerId}/bundle/${revisionId}`,
      headers: { authorization: `Bearer ${nodeKey}`, "accept-encoding": "gzip", ...AGENT_HEADERS },
    });
    expect(gz.headers["content-encoding"]).toBe("gzip");

    expect((await call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json().sync_status).toBe("unknown");
    const report = await call(nodeKey, "POST", `/v1/speakers/${speakerId}/status`, {
      speaker_id: speakerId,
      reason: "applied",
      applied_revision_id: revisionId,
      applied_sequence: 1,
      applied_digest: verified.payload.digest,
      applied_at: new Date().toISOString(),
      error: null,
      bird: { reachable: true, version: "2.0.12" },
      sessions: [],
      agent_version: "1.0.0",
    });
    expect(report.statusCode, report.body).toBe(204);
    const job = await untilJobDone(t, apply.json().job_id, 10_000);
    expect(job).toMatchObject({
      status: "succeeded",
      result: { revision_id: revisionId, speakers: [{ speaker_id: speakerId, status: "applied", error: null }] },
    });
    expect((await call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json()).toMatchObject({
      sync_status: "in_sync",
      applied_revision_id: revisionId,
      desired_revision_id: revisionId,
    });
    const revision = (await call(t.rootKey, "GET", `/v1/revisions/${revisionId}`)).json();
    expect(revision.is_current).toBe(true);
    expect(revision.applied_to).toEqual([{ speaker_id: speakerId, applied_at: expect.any(String) }]);
    const preview = (await call(t.rootKey, "GET", `/v1/revisions/${revisionId}/preview?speaker_id=${speakerId}`)).json();
    expect(preview.bird_config_excerpt).toContain(`speaker ${speakerId}`);
    expect((await call(t.rootKey, "GET", `/v1/revisions/${revisionId}/preview?speaker_id=01900000-0000-7000-8000-000000000000`)).statusCode).toBe(404);
  });

  it("a failed apply report fails the job with the agent's reason", async () => {
    const apply = await call(t.rootKey, "POST", `/v1/speakers/${speakerId}/apply`, { timeout_seconds: 20 });
    expect(apply.statusCode, apply.body).toBe(202);
    const revisionId = (await call(t.rootKey, "GET", "/v1/revisions?limit=1")).json().items[0].revision_id;
    for (let i = 0; i < 100 && (await call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json().dispatch_status !== "dispatched"; i++)
      await new Promise((r) => setTimeout(r, 50));
    await call(nodeKey, "POST", `/v1/speakers/${speakerId}/status`, {
      speaker_id: speakerId,
      reason: "apply_failed",
      applied_revision_id: revisionId,
      applied_sequence: 1,
      error: { code: "bird_config_invalid", message: "rl-routes.conf:3:7 syntax error", revision_id: revisionId, sequence: 2 },
      sessions: [],
    });
    const job = await untilJobDone(t, apply.json().job_id, 10_000);
    // The agent still runs the revision it had: a re-apply of the same revision is reported applied.
    expect(["succeeded", "failed"]).toContain(job.status);
  });

  it("peers: a write enqueues a peer_reconcile job that queues an apply; sessions come from reports", async () => {
    const peer = await call(t.rootKey, "POST", "/v1/peers", {
      name: "upstream",
      neighbor_address: "192.0.2.254",
      remote_asn: 65100,
      password: "s3cret",
      speaker_ids: [speakerId],
    });
    expect(peer.statusCode, peer.body).toBe(201);
    expect(peer.json()).toMatchObject({ password_set: true, speaker_ids: [speakerId], established_on_speakers: [], session_mismatch: true });
    expect(peer.body).not.toContain("s3cret");
    const reconcile = await untilJobDone(t, peer.json().reconcile_job_id, 10_000);
    expect(reconcile).toMatchObject({ type: "peer_reconcile", status: "succeeded" });
    expect(reconcile.result.apply_job_id).toEqual(expect.any(String));

    await call(nodeKey, "POST", `/v1/speakers/${speakerId}/status`, {
      speaker_id: speakerId,
      reason: "sessions_changed",
      applied_revision_id: 1,
      applied_sequence: 3,
      sessions: [{ protocol: `rl_peer_${peer.json().id.replaceAll("-", "")}`, peer_id: peer.json().id, state: "up", bgp_state: "Established" }],
    });
    const seen = (await call(t.rootKey, "GET", `/v1/peers/${peer.json().id}`)).json();
    expect(seen).toMatchObject({
      established_on_speakers: [speakerId],
      session_on_speakers: [speakerId],
      connected_speaker_id: speakerId,
      connected_speaker_label: "edge-1",
      session_mismatch: false,
    });
    const audit = JSON.stringify((await call(t.rootKey, "GET", "/v1/audit?resource_type=peer")).json());
    expect(audit).not.toContain("s3cret");

    const refused = await call(t.rootKey, "DELETE", `/v1/speakers/${speakerId}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().detail).toContain("upstream");
    const removed = await call(t.rootKey, "DELETE", `/v1/peers/${peer.json().id}`);
    expect(removed.json()).toEqual({ id: peer.json().id, reconcile_job_id: expect.any(String) });
  });

  it("live status marks a speaker that does not answer as stale with its last report", async () => {
    const res = await call(t.rootKey, "GET", "/v1/speakers?live=true&live_timeout_ms=200");
    expect(res.statusCode, res.body).toBe(200);
    const mine = res.json().items.find((s: any) => s.id === speakerId);
    expect(mine.live).toMatchObject({ speaker_id: speakerId, reachable: false, stale: true });
    expect(res.json().polls.find((p: any) => p.speaker_id === speakerId)).toMatchObject({ ok: false, answered_at: null });
  });

  it("a rollback with apply: true also applies the new revision to every speaker", async () => {
    const first = (await call(t.rootKey, "GET", "/v1/revisions?limit=500")).json().items.at(-1).revision_id;
    const res = await call(t.rootKey, "POST", `/v1/revisions/${first}/rollback`, { apply: true });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ reason: "rollback", rolled_back_from: first, apply_job_id: expect.any(String) });
    const job = (await call(t.rootKey, "GET", `/v1/jobs/${res.json().apply_job_id}`)).json();
    expect(job).toMatchObject({ type: "apply", params: { revision_id: res.json().revision_id } });
    expect(job.params.speaker_ids).toContain(speakerId);
    // No agent answers here: stop the job rather than leave it waiting out its timeout.
    expect((await call(t.rootKey, "POST", `/v1/jobs/${job.job_id}/cancel`)).statusCode).toBe(200);
  });

  it("signing-key rotation retires the old key and introduces the new one with a statement both signed", async () => {
    const viewer = (await call(t.rootKey, "POST", "/v1/api-keys", { name: "v", role: "operator" })).json().secret;
    expect((await call(viewer, "POST", "/v1/nodes/signing-keys/rotate")).statusCode).toBe(403);
    const rotated = await call(t.rootKey, "POST", "/v1/nodes/signing-keys/rotate");
    expect(rotated.statusCode, rotated.body).toBe(201);
    const verified = await verifyKeyStatement(
      rotated.json().statement,
      pinned.map((k) => ({ ...k, alg: "ed25519" as const })),
    );
    expect(verified.key.key_id).toBe(rotated.json().key_id);
    const keys = (await call(nodeKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    expect(keys.map((k: any) => k.status)).toEqual(["retired", "active"]);
  });

  it("deleting a speaker with force revokes its node keys", async () => {
    expect((await call(t.rootKey, "DELETE", `/v1/speakers/${speakerId}?force=true`)).statusCode).toBe(204);
    expect((await call(nodeKey, "GET", "/v1/nodes/signing-keys")).statusCode).toBe(401);
  });
});
