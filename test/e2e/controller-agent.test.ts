import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { internalSubjects } from "@rlc/proto";
import { afterAll, beforeAll, expect, it } from "vitest";
import { birdStampsReverts } from "../../packages/agent/src/probation/revert.js";
import { openPieces } from "../../packages/controller/src/lib/sealed-envelope.js";
import type { BirdClient } from "../../packages/shared/src/bird/birdc.js";
import { parseProtocolsAll } from "../../packages/shared/src/bird/status/parse-protocols.js";
import { freePort, lastReconfiguration, type Rib, readRibs, sameReconfiguration, startBirdLab, stopProcess, waitForRibs } from "../helpers/bird-lab.js";
import { describeEachBird } from "../helpers/bird-versions.js";
import { type LiveController, startLiveController, until, untilJobDone } from "../helpers/live-controller.js";

// The whole path with real parts on loopback: the controller (PostgreSQL, NATS, HTTP and gRPC
// listening), an `rl-agent run` process started from its sources, a real BIRD (each of the matrix,
// helpers/bird-versions.ts) driven by the agent in full mode, and GoBGP as the peer whose RIB shows what BIRD announces.

const root = join(import.meta.dirname, "../..");
const title = "controller + rl-agent + BIRD + GoBGP: revisions reach a real router";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

describeEachBird(title, ["gobgpd", "gobgp"], (b) => {
  let dir = "";
  let etc = "";
  let bird: ChildProcess | null = null;
  let gobgpd: ChildProcess | null = null;
  let agent: ChildProcess | null = null;
  let agentLog = "";
  let birdc: BirdClient;
  let t: LiveController;
  let apiPort = 0;
  let birdPort = 0;
  let gobgpPort = 0;
  let speakerId = "";
  let tenantId = "";
  let gobgpPeerId = "";
  const modules: Record<string, string> = {};
  const revisions: Record<string, number> = {};
  const expected: Record<string, [Rib, Rib]> = {};

  const call = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) => t.call(t.rootKey, method, url, payload);

  async function ok(method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object, status?: number) {
    const res = await call(method, url, payload);
    if (status ? res.statusCode !== status : res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.statusCode === 204 ? null : res.json();
  }

  async function refresh(): Promise<number> {
    const job = await ok("POST", "/v1/modules/refresh?wait=true");
    expect(job.status, JSON.stringify(job)).toBe("succeeded");
    return job.result.revision_id;
  }

  /** GoBGP's RIB as the revision says it should be: every prefix with exactly its communities. */
  async function ribsOf(revisionId: number): Promise<[Rib, Rib]> {
    const out: [Rib, Rib] = [{}, {}];
    let cursor: string | null = null;
    do {
      const page: any = await ok("GET", `/v1/revisions/${revisionId}/prefixes?limit=500${cursor ? `&cursor=${cursor}` : ""}`);
      for (const p of page.items) out[p.family === 4 ? 0 : 1][p.prefix] = [...p.communities].sort();
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  }

  async function apply(body: object = {}) {
    const accepted = await ok("POST", "/v1/apply", { timeout_seconds: 60, ...body }, 202);
    return untilJobDone(t, accepted.job_id, 70_000);
  }

  const protocols = async () => (await birdc.command("show protocols")).text;
  /** Whether BIRD still runs the configuration it loaded at `at` (a lastReconfiguration reading). */
  const notReconfiguredSince = async (at: number) => sameReconfiguration(await lastReconfiguration(birdc), at);
  const protocolOf = (peerId: string) => `rl_peer_${peerId.replaceAll("-", "")}`;
  const gobgpSession = async () =>
    parseProtocolsAll((await birdc.command("show protocols all")).text, { now: new Date() }).sessions.find((s) => s.protocol === protocolOf(gobgpPeerId));
  const untilEstablished = () => until("the GoBGP session to be Established", async () => (await gobgpSession())?.bgp_state === "Established", 40_000, 200);
  /** The apply job a peer change queued, once done. */
  async function reconciled(reconcileJobId: string) {
    const reconcile = await untilJobDone(t, reconcileJobId);
    expect(reconcile.result.apply_job_id, JSON.stringify(reconcile)).toEqual(expect.any(String));
    return untilJobDone(t, reconcile.result.apply_job_id, 70_000);
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "rl-e2e-controller-"));
    etc = join(dir, "etc");
    mkdirSync(etc);
    // Full mode: the agent writes bird.conf itself; BIRD starts on a bare one.
    ({ bird, gobgpd, birdc, birdPort, gobgpPort, apiPort } = await startBirdLab(dir, etc, b.bird));

    t = await startLiveController({ env: { NATS_URL: natsUrl } });
  }, 60_000);

  afterAll(async () => {
    // Apply jobs still waiting on the speaker would hold the worker (and close()) until their timeout.
    if (t) {
      for (const job of (await call("GET", "/v1/jobs?status=running")).json().items ?? []) await call("POST", `/v1/jobs/${job.job_id}/cancel`);
    }
    if (agent?.pid && agent.exitCode === null && agent.signalCode === null) {
      process.kill(agent.pid, "SIGCONT");
      await stopProcess(agent);
    }
    birdc?.close();
    await t?.close();
    await Promise.all([stopProcess(gobgpd), stopProcess(bird)]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("create speaker → enroll → peer → modules → refresh → apply: the job succeeds and GoBGP holds exactly the revision's prefixes with their communities", async () => {
    const speaker = await ok("POST", "/v1/speakers", {
      name: "edge-e2e",
      mode: "remote",
      router_id: "127.0.0.1",
      asn: 65000,
      // GoBGP drops routes whose next hop is a loopback address.
      policies_json: { local_ip: "127.0.0.1", local_port: birdPort, next_hop_ipv4: "198.51.100.254", next_hop_ipv6: "2001:db8::254" },
    });
    speakerId = speaker.id;
    // A 2 s probation keeps the suite quick; the rules are those of the default 10 s.
    expect(await ok("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 2 } })).toMatchObject({ settings: { BIRD: { confirm_after_seconds: 2 } } });

    // The rl-agent command from its sources, as an operator runs it (full mode, enrollment token).
    agent = spawn(process.execPath, ["--import", "tsx", join(root, "packages/agent/src/main.ts"), "run"], {
      cwd: root,
      env: {
        ...b.env,
        TSX_TSCONFIG_PATH: join(import.meta.dirname, "tsconfig.agent-child.json"),
        RL_BIRD_BIN: b.bird,
        RL_CONTROLLER_URL: t.url,
        // HTTP is plain here; gRPC is TLS, checked against the CA hash the token carries.
        RL_INSECURE: "true",
        RL_ENROLLMENT_TOKEN: speaker.enrollment_token,
        RL_STATE_DIR: join(dir, "state"),
        BIRD_CONTROL_SOCKET: join(dir, "bird.ctl"),
        BIRD_CONFIG_PATH: join(etc, "bird.conf"),
        RL_BIRD_MODE: "full",
        RL_METRICS_LISTEN: "off",
        RL_LOG_LEVEL: "info",
      },
      stdio: ["ignore", "ignore", "pipe"],
    });
    agent.stderr?.on("data", (chunk: Buffer) => {
      agentLog += chunk.toString();
    });
    const enrolled = await until(
      "the agent to enroll",
      async () => {
        const s = await ok("GET", `/v1/speakers/${speakerId}`);
        return s.enrolled_at ? s : null;
      },
      30_000,
    );
    expect(enrolled.agent_version).toEqual(expect.any(String));
    tenantId = (await t.controller.deps.sql<{ tenant_id: string }[]>`SELECT tenant_id FROM speakers WHERE id = ${speakerId}`)[0]!.tenant_id;

    const gobgp = await ok("POST", "/v1/peers", {
      name: "gobgp",
      neighbor_address: "127.0.0.2",
      neighbor_port: gobgpPort,
      remote_asn: 65001,
      multihop: true,
      speaker_ids: [speakerId],
    });
    gobgpPeerId = gobgp.id;
    expect(await untilJobDone(t, gobgp.reconcile_job_id)).toMatchObject({ status: "succeeded", result: { apply_job_id: null } });

    const c100 = await ok("POST", "/v1/communities", { community: "65000:100", title: "via-vpn" });
    const c200 = await ok("POST", "/v1/communities", { community: "65000:200", title: "streaming" });
    const cLarge = await ok("POST", "/v1/communities", { community: "65000:1:100", title: "large tag" });
    for (const [name, community] of [
      ["vpn", c100],
      ["streaming", c200],
      ["tagged", cLarge],
    ] as const) {
      modules[name] = (await ok("POST", "/v1/modules", { name, type: "IP_RANGES", community_id: community.id })).id;
    }
    const entries: [string, string][] = [
      ["vpn", "11.1.0.0/16"],
      ["vpn", "2a00:1::/32"],
      ["streaming", "11.1.0.0/16"], // in two modules: both communities
      ["streaming", "12.2.0.0/16"],
      ["streaming", "12.3.0.0/24"],
      ["streaming", "2a00:2::/32"],
      ["tagged", "13.0.0.0/16"],
      ["tagged", "2a00:3::/48"],
    ];
    for (const [name, cidr] of entries) await ok("POST", `/v1/modules/${modules[name]}/ip-range-entries`, { cidr }, 201);
    revisions.first = await refresh();
    expected.first = await ribsOf(revisions.first);
    expect(expected.first[0]["11.1.0.0/16"]).toEqual(["65000:100", "65000:200"]);
    expect(expected.first[0]["13.0.0.0/16"]).toEqual(["65000:1:100"]);

    const job = await apply();
    expect(job, agentLog).toMatchObject({
      status: "succeeded",
      result: { revision_id: revisions.first, speakers: [{ speaker_id: speakerId, status: "applied" }] },
    });
    expect(await waitForRibs(apiPort, expected.first, 30_000)).toEqual(expected.first);
    expect(await ok("GET", `/v1/speakers/${speakerId}`)).toMatchObject({ applied_revision_id: revisions.first, sync_status: "in_sync" });
    expect(agentLog).toMatch(/"revision_id":\d+/);
    // Warned about RL_INSECURE; gRPC (TLS, pinned) carried the bundle without falling back to HTTP.
    expect(agentLog).toMatch(/RL_INSECURE=true/);
    expect(agentLog).not.toMatch(/gRPC failed; trying HTTP|gRPC not used/);
  }, 90_000);

  it("a second revision adds and withdraws the right routes", async () => {
    const listed = await ok("GET", `/v1/modules/${modules.streaming}/ip-range-entries?limit=500`);
    const gone = listed.items.find((e: any) => e.cidr === "12.3.0.0/24");
    await ok("DELETE", `/v1/modules/${modules.streaming}/ip-range-entries/${gone.id}`, undefined, 204);
    await ok("POST", `/v1/modules/${modules.vpn}/ip-range-entries`, { cidr: "14.4.0.0/16" }, 201);
    await ok("POST", `/v1/modules/${modules.tagged}/ip-range-entries`, { cidr: "2a00:4::/48" }, 201);
    revisions.second = await refresh();
    expected.second = await ribsOf(revisions.second);
    expect(expected.second[0]).toHaveProperty("14.4.0.0/16");
    expect(expected.second[0]).not.toHaveProperty("12.3.0.0/24");

    const job = await apply();
    expect(job, agentLog).toMatchObject({ status: "succeeded", result: { revision_id: revisions.second } });
    expect(await waitForRibs(apiPort, expected.second)).toEqual(expected.second);
  }, 60_000);

  it("a rollback to the first revision, applied, restores its set", async () => {
    const rolled = await ok("POST", `/v1/revisions/${revisions.first}/rollback`, {}, 201);
    revisions.rollback = rolled.revision_id;
    expect(revisions.rollback).toBeGreaterThan(revisions.second!);
    expect(await ribsOf(revisions.rollback!)).toEqual(expected.first);
    const job = await apply();
    expect(job, agentLog).toMatchObject({ status: "succeeded", result: { revision_id: revisions.rollback } });
    expect(await waitForRibs(apiPort, expected.first!)).toEqual(expected.first);
  }, 60_000);

  it("a re-push of the revision the agent already runs completes at once, not at its timeout", async () => {
    const reconfigured = await lastReconfiguration(birdc);
    // Done within half the job's timeout: a re-push that waited for its timeout would end failed, at 60 s.
    const accepted = await ok("POST", "/v1/apply", { revision_id: revisions.rollback, timeout_seconds: 60 }, 202);
    const job = await untilJobDone(t, accepted.job_id, 30_000);
    expect(job, agentLog).toMatchObject({
      status: "succeeded",
      result: { revision_id: revisions.rollback, speakers: [{ speaker_id: speakerId, status: "applied" }] },
    });
    // Nothing to apply: BIRD was not reconfigured, and the routes are as they were.
    expect(await notReconfiguredSince(reconfigured)).toBe(true);
    expect(await waitForRibs(apiPort, expected.first!)).toEqual(expected.first);
    expect(await ok("GET", `/v1/speakers/${speakerId}`)).toMatchObject({ applied_revision_id: revisions.rollback, sync_status: "in_sync" });
  }, 60_000);

  it("peer create and delete show up in BIRD and in the peers' session fields, without any ingest", async () => {
    const ingestsBefore = (await ok("GET", "/v1/jobs?type=module_ingest&limit=500")).items.length;
    const currentBefore = (await ok("GET", "/v1/revisions?limit=1")).items[0].revision_id;

    const quiet = await ok("POST", "/v1/peers", {
      name: "nobody-home",
      neighbor_address: "127.0.0.3",
      neighbor_port: await freePort("127.0.0.3"),
      remote_asn: 65002,
      multihop: true,
      speaker_ids: [speakerId],
    });
    expect((await untilJobDone(t, quiet.reconcile_job_id)).result.apply_job_id).toEqual(expect.any(String));
    await until("BIRD to run the new peer's protocol", async () => (await protocols()).includes(protocolOf(quiet.id)), 20_000);

    // A live poll refreshes the speaker's last report, from which the session fields come.
    await ok("GET", `/v1/speakers?live=true&live_timeout_ms=5000`);
    const peers = await until(
      "the session fields",
      async () => {
        await ok("GET", `/v1/speakers?live=true&live_timeout_ms=5000`);
        const items = (await ok("GET", "/v1/peers?limit=500")).items;
        const g = items.find((p: any) => p.id === gobgpPeerId);
        return g?.established_on_speakers.length ? items : null;
      },
      30_000,
      500,
    );
    expect(peers.find((p: any) => p.id === gobgpPeerId)).toMatchObject({
      established_on_speakers: [speakerId],
      session_on_speakers: [speakerId],
      connected_speaker_id: speakerId,
      connected_speaker_label: "edge-e2e",
      session_mismatch: false,
    });
    expect(peers.find((p: any) => p.id === quiet.id)).toMatchObject({ session_on_speakers: [speakerId], established_on_speakers: [], session_mismatch: true });

    const removed = await ok("DELETE", `/v1/peers/${quiet.id}`);
    await untilJobDone(t, removed.reconcile_job_id);
    await until("BIRD to drop the peer's protocol", async () => !(await protocols()).includes(protocolOf(quiet.id)), 20_000);
    expect(await protocols()).toContain(protocolOf(gobgpPeerId));
    await ok("GET", `/v1/speakers?live=true&live_timeout_ms=5000`);
    expect((await ok("GET", "/v1/peers?limit=500")).items.map((p: any) => p.id)).toEqual([gobgpPeerId]);

    expect((await ok("GET", "/v1/jobs?type=module_ingest&limit=500")).items.length).toBe(ingestsBefore);
    expect((await ok("GET", "/v1/revisions?limit=1")).items[0].revision_id).toBe(currentBefore);
    expect(await waitForRibs(apiPort, expected.first!)).toEqual(expected.first);
  }, 60_000);

  it("GET /v1/speakers?live=true: the agent answers, BIRD reachable, the GoBGP session Established", async () => {
    const res = await ok("GET", "/v1/speakers?live=true&live_timeout_ms=5000");
    const live = res.items.find((s: any) => s.id === speakerId).live;
    expect(live).toMatchObject({
      speaker_id: speakerId,
      reachable: true,
      stale: false,
      revision_id: revisions.rollback,
      bird: { version: b.version, router_id: "127.0.0.1" },
    });
    expect(live.sessions.find((s: any) => s.peer_id === gobgpPeerId)).toMatchObject({
      protocol: protocolOf(gobgpPeerId),
      neighbor_address: "127.0.0.2",
      remote_asn: 65001,
      state: "up",
      bgp_state: "Established",
      routes_exported: Object.keys(expected.first![0]).length + Object.keys(expected.first![1]).length,
    });
    expect(res.polls.find((p: any) => p.speaker_id === speakerId)).toMatchObject({ ok: true, error: null });
  }, 20_000);

  it("a tampered bundle is refused: BIRD's config stays byte for byte, GoBGP's RIB unchanged, and the apply job reports why", async () => {
    await ok("POST", `/v1/modules/${modules.vpn}/ip-range-entries`, { cidr: "15.5.0.0/16" }, 201);
    const revision = await refresh();
    const files = () => [readFileSync(join(etc, "bird.conf")), readFileSync(join(etc, "rl-routes.conf"))];
    const before = files();
    const reconfigured = await lastReconfiguration(birdc);

    // Held still so that the bundle is forged between its signing and the agent's fetch.
    process.kill(agent!.pid!, "SIGSTOP");
    let job: any;
    try {
      const accepted = await ok("POST", "/v1/apply", { revision_id: revision, timeout_seconds: 30 }, 202);
      const sql = t.controller.deps.sql;
      const [row] = await until("the bundle to be issued", async () => {
        const rows = await sql<{ envelope: Buffer; envelope_sealed: boolean; envelope_chunk: number | null; digest: string; sequence: string }[]>`
          SELECT b.envelope, b.envelope_sealed, b.envelope_chunk, b.digest, b.sequence FROM bundles b JOIN speakers s ON s.id = b.speaker_id
          WHERE b.speaker_id = ${speakerId} AND b.revision_id = ${revision} AND s.dispatch_status = 'dispatched'`;
        return rows.length ? rows : null;
      });
      // A route slipped into the prefixes: they no longer have the SHA-256 the signed header names.
      // Stored bundles are sealed at rest, head and prefix section apart: open both, forge the
      // whole, and store the forgery as a plain row holding the whole bundle (the form rows issued
      // before sealing keep, served as they are, with no delta).
      const box = t.controller.deps.services.secretBox;
      const head = await openPieces(box, row!.envelope, row!.envelope_chunk!);
      const [section] = await sql<{ body: Buffer; chunk: number }[]>`
        SELECT body, chunk FROM bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revision} AND base_revision_id = 0`;
      const whole = Buffer.concat([head, await openPieces(box, section!.body, section!.chunk)]);
      const forged = Buffer.from(whole.toString("latin1").replace("15.5.0.0/16", "15.6.0.0/16"), "latin1");
      expect(forged.equals(whole)).toBe(false);
      await sql`UPDATE bundles SET envelope = ${forged}, envelope_sealed = false, envelope_chunk = null, envelope_size = null, envelope_sha256 = null,
                format = 1, delta_base_revision_id = null, delta_head = null
                WHERE speaker_id = ${speakerId} AND revision_id = ${revision}`;
      t.controller.deps.bus.publish(internalSubjects.notify(tenantId, speakerId), {
        type: "new_revision",
        speaker_id: speakerId,
        revision_id: revision,
        digest: row!.digest,
        sequence: Number(row!.sequence),
      });
      process.kill(agent!.pid!, "SIGCONT");
      job = await untilJobDone(t, accepted.job_id, 40_000);
    } finally {
      process.kill(agent!.pid!, "SIGCONT");
    }
    expect(job.status, agentLog).toBe("failed");
    expect(job.error.detail).toContain("bad_signature");
    expect(job.error.speakers).toEqual([
      expect.objectContaining({ speaker_id: speakerId, status: "failed", error: expect.objectContaining({ code: "bad_signature", revision_id: revision }) }),
    ]);
    const after = files();
    expect(after[0]!.equals(before[0]!) && after[1]!.equals(before[1]!)).toBe(true);
    expect(await notReconfiguredSince(reconfigured)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(await readRibs(apiPort)).toEqual(expected.first);
    expect(await ok("GET", `/v1/speakers/${speakerId}`)).toMatchObject({
      applied_revision_id: revisions.rollback,
      sync_status: "error",
      last_error: { code: "bad_signature" },
    });
  }, 60_000);
  it("probation: a remote AS the receiver refuses → the apply job fails with reverted, GoBGP keeps the previous routes, the session comes back, the speaker says why, and the bundle is not tried again", async () => {
    await untilEstablished();
    const current = (await ok("GET", "/v1/revisions?limit=1")).items[0].revision_id;
    const reconfigured = await lastReconfiguration(birdc);
    const changed = await ok("PATCH", `/v1/peers/${gobgpPeerId}`, { remote_asn: 65099 });
    const job = await reconciled(changed.reconcile_job_id);
    expect(job.status, agentLog).toBe("failed");
    expect(job.error.speakers).toEqual([
      expect.objectContaining({
        speaker_id: speakerId,
        status: "failed",
        error: expect.objectContaining({ code: "reverted", check: "sessions_established", sessions: [protocolOf(gobgpPeerId)], revision_id: current }),
      }),
    ]);
    const speaker = await ok("GET", `/v1/speakers/${speakerId}`);
    expect(speaker).toMatchObject({
      applied_revision_id: revisions.rollback,
      sync_status: "error",
      last_error: { code: "reverted", check: "sessions_established" },
    });
    expect(speaker.last_error.message).toMatch(/AS 65099.*BIRD runs the previous configuration again/);
    // BIRD runs the previous configuration: its load time (BIRD 3 stamps the undo anew), AS 65001,
    // the session back, GoBGP's routes.
    const reverted = await lastReconfiguration(birdc);
    if (birdStampsReverts(b.version)) expect(reverted).toBeGreaterThan(reconfigured);
    else expect(sameReconfiguration(reverted, reconfigured)).toBe(true);
    expect((await gobgpSession())?.remote_asn).toBe(65001);
    await untilEstablished();
    expect(await waitForRibs(apiPort, expected.first!, 20_000)).toEqual(expected.first);

    // The controller names the same bundle again: the agent leaves it.
    const [bundle] = await t.controller.deps.sql<{ digest: string; sequence: string }[]>`
      SELECT digest, sequence FROM bundles WHERE speaker_id = ${speakerId} AND revision_id = ${current}`;
    const probations = () => agentLog.split("\n").filter((l) => l.includes("on probation") && l.includes(`"sequence":${bundle!.sequence},`)).length;
    expect(probations()).toBe(1);
    t.controller.deps.bus.publish(internalSubjects.notify(tenantId, speakerId), {
      type: "new_revision",
      speaker_id: speakerId,
      revision_id: current,
      digest: bundle!.digest,
      sequence: Number(bundle!.sequence),
    });
    await new Promise((r) => setTimeout(r, 3000));
    expect(probations()).toBe(1);
    expect(await notReconfiguredSince(reverted)).toBe(true);
  }, 120_000);

  it("probation: POST /v1/apply with force_confirm applies the change that keeps the session down (audited); putting the AS back brings it up", async () => {
    const current = (await ok("GET", "/v1/revisions?limit=1")).items[0].revision_id;
    const job = await apply({ force_confirm: true });
    expect(job, agentLog).toMatchObject({ status: "succeeded", result: { revision_id: current, speakers: [{ speaker_id: speakerId, status: "applied" }] } });
    expect((await gobgpSession())?.remote_asn).toBe(65099);
    expect((await gobgpSession())?.bgp_state).not.toBe("Established");
    const audit = (await ok("GET", "/v1/audit?limit=20")).items.find((a: any) => a.action === "apply" && a.summary.includes(job.job_id));
    expect(audit.summary).toContain("force_confirm");

    const back = await ok("PATCH", `/v1/peers/${gobgpPeerId}`, { remote_asn: 65001 });
    expect(await reconciled(back.reconcile_job_id)).toMatchObject({ status: "succeeded" });
    await untilEstablished();
    const now = await ribsOf(current);
    expect(await waitForRibs(apiPort, now, 20_000)).toEqual(now);
    expect(await ok("GET", `/v1/speakers/${speakerId}`)).toMatchObject({ applied_revision_id: current, sync_status: "in_sync", last_error: null });
  }, 120_000);
});
