import { execFileSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import { spkiHash } from "@rlc/shared";
import { verifyBundle } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { startController } from "../../packages/controller/src/controller.js";
import { createAgentService } from "../../packages/controller/src/grpc/agent-service.js";
import { type GrpcListener, listenGrpc } from "../../packages/controller/src/grpc/server.js";
import { loadGrpcTls } from "../../packages/controller/src/grpc/tls.js";
import { bundleReissueTask } from "../../packages/controller/src/scheduler/bundle-reissue.js";
import { type AgentServiceClient, grpc } from "../../packages/proto/src/index.js";
import { AGENT_HEADERS, agentClient, codeOf, enroll, getBundle, reportStatus, watch } from "../helpers/agent-grpc.js";
import { type LiveController, startLiveController, until, untilJobDone } from "../helpers/live-controller.js";

// AgentService over a real listener (GRPC_PORT=0) with a real grpc-js client playing the agent.

let t: LiveController;
let client: AgentServiceClient;
let speakerId: string;
let tenantId: string;
let nodeKey: string;
let otherSpeakerId: string;
let revisionId: number;

async function newSpeaker(name: string) {
  const res = await t.call(t.rootKey, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.1", asn: 65010 });
  expect(res.statusCode, res.body).toBe(201);
  return res.json() as { id: string; enrollment_token: string };
}

beforeAll(async () => {
  t = await startLiveController();
  client = agentClient(t.grpcAddress, t.grpcCredentials);
  const community = (await t.call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
  const mod = (await t.call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
  await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
  await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "2a00:1::/32" });
  const refreshed = await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
  expect(refreshed.statusCode, refreshed.body).toBe(200);
  revisionId = refreshed.json().result.revision_id;
});

afterAll(async () => {
  client?.close();
  await t?.close();
});

describe("gRPC AgentService", () => {
  it("Enroll spends the token once and answers the node key, the signing keys and the bound endpoint", async () => {
    const speaker = await newSpeaker("edge-1");
    speakerId = speaker.id;
    // A bad request does not spend the token.
    expect(await codeOf(enroll(client, speaker.enrollment_token, ""))).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await codeOf(enroll(client, speaker.enrollment_token, "r1\0evil"))).toBe(grpc.status.INVALID_ARGUMENT);
    const answer = await enroll(client, speaker.enrollment_token, "r1.example", "2.0.0");
    expect(answer).toMatchObject({ speaker_id: speaker.id, grpc_endpoint: t.grpcAddress, nats_url: "" });
    expect(answer.api_key).toMatch(/^rlk_/);
    expect(answer.signing_keys).toEqual([expect.objectContaining({ alg: "ed25519", status: "SIGNING_KEY_STATUS_ACTIVE", statement_json: "" })]);
    nodeKey = answer.api_key;
    tenantId = answer.tenant_id;
    expect(await codeOf(enroll(client, speaker.enrollment_token))).toBe(grpc.status.UNAUTHENTICATED);
    expect(await codeOf(enroll(client, null))).toBe(grpc.status.UNAUTHENTICATED);
    expect((await t.call(t.rootKey, "GET", `/v1/speakers/${speaker.id}`)).json()).toMatchObject({ hostname: "r1.example", agent_version: "2.0.0" });
    otherSpeakerId = (await newSpeaker("edge-2")).id;
  });

  it("Watch starts with a PING without a desired revision; bad keys, operator keys and other speakers are refused", async () => {
    const w = watch(client, nodeKey);
    expect((await w.next(() => true)).type).toBe("WATCH_EVENT_TYPE_PING");
    w.cancel();
    expect((await watch(client, "rlk_AAAAAAAA_" + "x".repeat(43)).ended).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await watch(client, "garbage").ended).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await watch(client, null).ended).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await watch(client, t.rootKey).ended).code).toBe(grpc.status.PERMISSION_DENIED);
    expect((await watch(client, nodeKey, { speaker_id: otherSpeakerId }).ended).code).toBe(grpc.status.NOT_FOUND);
    expect((await watch(client, nodeKey, { speaker_id: "not-a-uuid" }).ended).code).toBe(grpc.status.NOT_FOUND);
  });

  it("apply reaches the Watch stream; GetBundle streams the HTTP route's bytes; ReportStatus applied ends the job", async () => {
    const w = watch(client, nodeKey);
    await w.next(() => true);
    const apply = await t.call(t.rootKey, "POST", "/v1/apply", { speaker_ids: [speakerId], timeout_seconds: 20 });
    expect(apply.statusCode, apply.body).toBe(202);
    const event = await w.next((e) => e.type === "WATCH_EVENT_TYPE_NEW_REVISION");
    expect(event).toMatchObject({ speaker_id: speakerId, revision_id: revisionId, sequence: 1, digest: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });

    const chunks = await getBundle(client, nodeKey, speakerId, revisionId);
    const bytes = Buffer.concat(chunks.map((c) => c.data));
    // rl-bundle/2 names the SHA-256 of each part in its signed header: no hash of the whole.
    expect(chunks[0]).toMatchObject({ offset: 0, total_size: bytes.length, revision_id: revisionId, sha256: "" });
    const http = await t.controller.app.inject({
      method: "GET",
      url: `/v1/speakers/${speakerId}/bundle/${revisionId}`,
      headers: { authorization: `Bearer ${nodeKey}`, ...AGENT_HEADERS },
    });
    expect(bytes.equals(http.rawPayload)).toBe(true);
    const keys = (await t.call(nodeKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    const verified = await verifyBundle(bytes, keys, { speakerId, tenantId, lastSequence: null, now: new Date() });
    expect(verified.payload).toMatchObject({ revision_id: revisionId, sequence: 1, digest: event.digest });

    // A reconnecting agent is told the desired revision first.
    const again = watch(client, nodeKey, { speaker_id: speakerId });
    expect(await again.next(() => true)).toMatchObject({ type: "WATCH_EVENT_TYPE_NEW_REVISION", revision_id: revisionId, sequence: 1, digest: event.digest });
    again.cancel();

    await reportStatus(client, nodeKey, {
      speaker_id: speakerId,
      reason: "REPORT_REASON_APPLIED",
      applied_revision_id: revisionId,
      applied_sequence: 1,
      applied_digest: event.digest,
      applied_at: new Date().toISOString(),
    });
    const job = await untilJobDone(t, apply.json().job_id);
    expect(job).toMatchObject({ status: "succeeded", result: { speakers: [{ speaker_id: speakerId, status: "applied" }] } });
    expect((await t.call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json()).toMatchObject({ sync_status: "in_sync", applied_revision_id: revisionId });
    w.cancel();
  });

  it("GetBundle: NOT_FOUND for an unknown revision, revision 0 and another speaker; UNAUTHENTICATED for a bad key", async () => {
    expect(await codeOf(getBundle(client, nodeKey, speakerId, 999))).toBe(grpc.status.NOT_FOUND);
    expect(await codeOf(getBundle(client, nodeKey, speakerId, 0))).toBe(grpc.status.NOT_FOUND);
    expect(await codeOf(getBundle(client, nodeKey, speakerId, 2 ** 40))).toBe(grpc.status.NOT_FOUND);
    expect(await codeOf(getBundle(client, nodeKey, otherSpeakerId, revisionId))).toBe(grpc.status.NOT_FOUND);
    expect(await codeOf(getBundle(client, "rlk_AAAAAAAA_" + "x".repeat(43), speakerId, revisionId))).toBe(grpc.status.UNAUTHENTICATED);
    // An empty speaker_id means the key's own speaker.
    expect((await getBundle(client, nodeKey, "", revisionId)).length).toBeGreaterThan(0);
  });

  it("a live poll reaches the agent as LIVE_POLL and its ReportStatus answer makes the speaker reachable", async () => {
    const w = watch(client, nodeKey);
    await w.next(() => true);
    const from = w.events.length;
    const polled = t.call(t.rootKey, "GET", "/v1/speakers?live=true&live_timeout_ms=2000");
    const poll = await w.next((e) => e.type === "WATCH_EVENT_TYPE_LIVE_POLL", { from });
    await reportStatus(client, nodeKey, {
      speaker_id: speakerId,
      reason: "REPORT_REASON_LIVE_POLL",
      poll_id: poll.poll_id,
      applied_revision_id: revisionId,
      applied_sequence: 1,
      sessions: [
        {
          protocol: "rl_peer_x",
          peer_id: "",
          neighbor_address: "192.0.2.9",
          remote_asn: 65001,
          state: "up",
          bgp_state: "Established",
          since: "",
          routes_imported: 0,
          routes_exported: 2,
          last_error: "",
        },
      ],
    });
    const res = await polled;
    expect(res.statusCode, res.body).toBe(200);
    const mine = res.json().items.find((s: any) => s.id === speakerId);
    expect(mine.live).toMatchObject({
      reachable: true,
      stale: false,
      revision_id: revisionId,
      sessions: [{ protocol: "rl_peer_x", bgp_state: "Established", peer_id: null }],
    });
    expect(res.json().polls.find((p: any) => p.speaker_id === speakerId)).toMatchObject({ ok: true });
    w.cancel();
  });

  it("ReportStatus: UNAUTHENTICATED for an unknown key, NOT_FOUND for another speaker, INVALID_ARGUMENT for a bad report", async () => {
    expect(await codeOf(reportStatus(client, "rlk_AAAAAAAA_" + "x".repeat(43), { speaker_id: speakerId }))).toBe(grpc.status.UNAUTHENTICATED);
    expect(await codeOf(reportStatus(client, nodeKey, { speaker_id: otherSpeakerId }))).toBe(grpc.status.NOT_FOUND);
    expect(await codeOf(reportStatus(client, nodeKey, { speaker_id: speakerId, poll_id: "p".repeat(500) }))).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await codeOf(reportStatus(client, nodeKey, { speaker_id: speakerId, applied_revision_id: 2 ** 40 }))).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await codeOf(reportStatus(client, nodeKey, { speaker_id: speakerId, agent_version: "1\0" }))).toBe(grpc.status.INVALID_ARGUMENT);
    expect(await codeOf(reportStatus(client, nodeKey, { speaker_id: "", applied_revision_id: revisionId, applied_sequence: 1 }))).toBe(grpc.status.OK);
  });

  it("re-issue: a bundle expiring within two days is signed again (new sequence, same digest), the agent is told, dispatch status kept", async () => {
    const w = watch(client, nodeKey);
    await w.next(() => true);
    const from = w.events.length;
    const sql = t.controller.deps.sql;
    await sql`UPDATE bundles SET expires_at = now() + interval '1 day' WHERE speaker_id = ${speakerId}`;
    const before = (await t.call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json();
    const task = bundleReissueTask(t.controller.deps.services.deploy);
    await task.run(new Date());
    const event = await w.next((e) => e.type === "WATCH_EVENT_TYPE_NEW_REVISION", { from });
    const [row] = await sql<
      { sequence: string; digest: string; expires_at: Date }[]
    >`SELECT sequence, digest, expires_at FROM bundles WHERE speaker_id = ${speakerId}`;
    expect(event).toMatchObject({ revision_id: revisionId, sequence: 2, digest: row!.digest });
    expect(Number(row!.sequence)).toBe(2);
    expect(row!.expires_at.getTime()).toBeGreaterThan(Date.now() + 6 * 24 * 3600_000);
    const after = (await t.call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json();
    expect(after).toMatchObject({ dispatch_status: before.dispatch_status, desired_revision_id: revisionId, sync_status: "in_sync" });
    // Nothing is due now: a second run signs nothing.
    await task.run(new Date());
    await new Promise((r) => setTimeout(r, 200));
    expect(w.events.slice(from).filter((e) => e.type === "WATCH_EVENT_TYPE_NEW_REVISION")).toHaveLength(1);
    w.cancel();
  });
});

describe("the Watch stream's own life", () => {
  let listener: GrpcListener;
  let service: ReturnType<typeof createAgentService>;
  let own: AgentServiceClient;

  beforeAll(async () => {
    const d = t.controller.deps;
    service = createAgentService({
      sql: d.sql,
      bus: d.bus,
      clock: d.clock,
      node: d.services.node,
      authenticator: d.services.authenticator,
      logger: t.controller.app.log,
      pingMs: 150,
      chunkBytes: 200,
    });
    listener = await listenGrpc({ host: "127.0.0.1", port: 0, tls: null });
    listener.serve(service);
    own = agentClient(listener.address);
  });
  afterAll(async () => {
    own?.close();
    await listener?.close();
  });

  it("pings on its period and drops its bus subscription when the agent goes away", async () => {
    const w = watch(own, nodeKey);
    await until("three PINGs", async () => w.events.filter((e) => e.type === "WATCH_EVENT_TYPE_PING").length >= 3, 5000, 20);
    expect(service.openWatches()).toBe(1);
    w.cancel();
    await until("the stream to be let go", async () => service.openWatches() === 0, 5000, 20);
  });

  it("GetBundle sends several chunks that follow one another without gaps", async () => {
    const chunks = await getBundle(own, nodeKey, speakerId, revisionId);
    expect(chunks.length).toBeGreaterThan(2);
    let offset = 0;
    for (const c of chunks) {
      expect(c.offset).toBe(offset);
      expect(c.data.length).toBeLessThanOrEqual(200);
      offset += c.data.length;
    }
    expect(chunks[0]!.total_size).toBe(offset);
    expect(chunks.slice(1).every((c) => c.total_size === 0 && c.sha256 === "" && c.revision_id === 0)).toBe(true);
  });

  it("a key revoked while the stream is open loses it at the next PING", async () => {
    const speaker = await newSpeaker("edge-doomed");
    const answer = await enroll(own, speaker.enrollment_token);
    const w = watch(own, answer.api_key);
    await w.next(() => true);
    const removed = await t.call(t.rootKey, "DELETE", `/v1/speakers/${speaker.id}?force=true`);
    expect(removed.statusCode, removed.body).toBe(204);
    expect((await w.ended).code).toBe(grpc.status.UNAUTHENTICATED);
    await until("the stream to be let go", async () => service.openWatches() === 0, 5000, 20);
  });

  it("closing the listener ends open Watch streams", async () => {
    const w = watch(own, nodeKey);
    await w.next(() => true);
    await listener.close();
    expect((await w.ended).code).toBe(grpc.status.OK);
    expect(service.openWatches()).toBe(0);
  });
});

describe("gRPC TLS by default (the controller's own CA)", () => {
  it("serves TLS with a certificate its CA signed; enrollment tokens carry the CA's hash; plaintext is refused", async () => {
    expect(t.controller.grpc?.tls).toBe(true);
    expect(t.caPem).toMatch(/BEGIN CERTIFICATE/);
    const caHash = spkiHash(t.caPem!);
    const speaker = await newSpeaker("edge-pinned");
    expect(speaker.enrollment_token).toMatch(/^rlt_[A-Za-z0-9_-]{43}\.[0-9a-f]{64}$/);
    expect(`sha256:${speaker.enrollment_token.split(".")[1]}`).toBe(caHash);
    // The chain the listener presents holds the CA the hash names.
    const chain = await new Promise<string[]>((resolve, reject) => {
      const socket = tlsConnect({ host: "127.0.0.1", port: t.controller.grpc!.port, rejectUnauthorized: false, ALPNProtocols: ["h2"] }, () => {
        const hashes: string[] = [];
        let cert = socket.getPeerCertificate(true);
        for (let i = 0; i < 5 && cert?.raw; i++) {
          hashes.push(spkiHash(new X509Certificate(cert.raw).toString()));
          if (cert.issuerCertificate === cert) break;
          cert = cert.issuerCertificate;
        }
        socket.end();
        resolve(hashes);
      });
      socket.on("error", reject);
    });
    expect(chain).toContain(caHash);
    const plain = agentClient(t.grpcAddress);
    expect((await watch(plain, "rlk_AAAAAAAA_" + "x".repeat(43)).ended).code).toBe(grpc.status.UNAVAILABLE);
    plain.close();
  });

  it("GRPC_INSECURE=true serves plaintext, and its tokens carry no CA hash", async () => {
    const plain = await startLiveController({ env: { GRPC_INSECURE: "true" } });
    try {
      expect(plain.controller.grpc?.tls).toBe(false);
      const created = await plain.call(plain.rootKey, "POST", "/v1/speakers", { name: "edge-plain", mode: "remote", router_id: "192.0.2.1", asn: 65010 });
      expect(created.json().enrollment_token).toMatch(/^rlt_[A-Za-z0-9_-]{43}$/);
      const c = agentClient(plain.grpcAddress);
      expect((await watch(c, "rlk_AAAAAAAA_" + "x".repeat(43)).ended).code).toBe(grpc.status.UNAUTHENTICATED);
      c.close();
    } finally {
      await plain.close();
    }
  });

  it("every replica on the database serves the same CA", async () => {
    const config = loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: "silent", GRPC_HOST: "127.0.0.1", GRPC_PORT: "0" });
    const replica = await startController(config, { logger: false, grpc: true });
    try {
      const secure = agentClient(`127.0.0.1:${replica.grpc?.port}`, t.grpcCredentials);
      expect((await watch(secure, "rlk_AAAAAAAA_" + "x".repeat(43)).ended).code).toBe(grpc.status.UNAUTHENTICATED);
      secure.close();
    } finally {
      await replica.close();
    }
  });

  it("a TLS connection that never says hello is dropped after the handshake timeout", async () => {
    const [row] = await t.controller.db.sql<{ cert_pem: string; ca_pem: string }[]>`SELECT cert_pem, ca_pem FROM grpc_tls`;
    const tls = await loadGrpcTls({ sql: t.controller.db.sql, secretBox: t.controller.deps.services.secretBox, files: null, names: [], now: new Date() });
    expect(tls.cert.toString()).toContain(row!.cert_pem.trim());
    const listener = await listenGrpc({ host: "127.0.0.1", port: 0, tls: { cert: tls.cert, key: tls.key }, connection: { handshakeMs: 300 } });
    try {
      const socket = connect(listener.port, "127.0.0.1");
      socket.resume();
      const closed = await Promise.race([
        new Promise<boolean>((resolve) => socket.once("close", () => resolve(true))),
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000)),
      ]);
      socket.destroy();
      expect(closed).toBe(true);
    } finally {
      await listener.close(100);
    }
  });
});

describe("gRPC over TLS (GRPC_TLS_CERT, GRPC_TLS_KEY)", () => {
  let dir = "";
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "rl-grpc-tls-"));
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-days",
        "1",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
      ],
      { stdio: "ignore" },
    );
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("serves TLS with the configured certificate and refuses plaintext", async () => {
    const tls = await startLiveController({ env: { GRPC_TLS_CERT: join(dir, "cert.pem"), GRPC_TLS_KEY: join(dir, "key.pem") } });
    try {
      const secure = agentClient(`localhost:${tls.controller.grpc?.port}`, grpc.credentials.createSsl(readFileSync(join(dir, "cert.pem"))));
      // The service answers (it refuses the unknown key), so the handshake went through.
      expect((await watch(secure, "rlk_AAAAAAAA_" + "x".repeat(43)).ended).code).toBe(grpc.status.UNAUTHENTICATED);
      const plain = agentClient(tls.grpcAddress);
      expect((await watch(plain, "rlk_AAAAAAAA_" + "x".repeat(43)).ended).code).toBe(grpc.status.UNAVAILABLE);
      secure.close();
      plain.close();
    } finally {
      await tls.close();
    }
  });

  it("one of the two files without the other fails the start with a configuration error", async () => {
    const config = loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: "silent", GRPC_HOST: "127.0.0.1", GRPC_PORT: "0", GRPC_TLS_CERT: join(dir, "cert.pem") });
    await expect(startController(config, { logger: false, grpc: true })).rejects.toThrow(/GRPC_TLS_KEY/);
  });
});
