import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { BirdClient } from "../../packages/shared/src/bird/birdc.js";
import { freePort, lastReconfiguration, sameReconfiguration, startProcess, stopProcess } from "../helpers/bird-lab.js";
import { describeEachBird } from "../helpers/bird-versions.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { untilJobDone } from "../helpers/wait.js";

// POST /v1/bird/reload and GET /v1/bird/status against a real BIRD on this host (each of the
// matrix, helpers/bird-versions.ts), which the
// controller drives through the agent's renderer, `bird -p` and configure/confirm code.

const title = "the local speaker: the controller drives the BIRD on its own host";

describeEachBird(title, [], (b) => {
  const path = process.env.PATH;
  let dir = "";
  let include = "";
  let bird: ChildProcess | null = null;
  let birdc: BirdClient;
  let t: TestController;
  let bare: TestController;
  let viewer: string;
  let revisionId: number;
  let speakerId: string;
  let peerId: string;

  const call = (key: string | null, method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) =>
    t.call(key, { method, url, ...(payload ? { payload } : {}) });

  const untilJob = (id: string) => untilJobDone(t, id, 20_000);

  /** The apply job a peer write ends in, once it waits on the speaker (dispatched). */
  async function dispatchedApply(reconcileJobId: string): Promise<string> {
    const reconcile = await untilJob(reconcileJobId);
    expect(reconcile.status, JSON.stringify(reconcile)).toBe("succeeded");
    for (let i = 0; i < 200; i++) {
      if ((await call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json().dispatch_status === "dispatched") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    return reconcile.result.apply_job_id;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "rl-local-bird-"));
    const etc = join(dir, "etc");
    mkdirSync(etc);
    include = join(etc, "rl-routes.conf");
    writeFileSync(include, "");
    writeFileSync(
      join(etc, "bird.conf"),
      [`log "${dir}/bird.log" all;`, "router id 127.0.0.1;", "timeformat protocol iso long;", "protocol device {", "}", `include "${include}";`, ""].join("\n"),
    );
    // The controller runs `bird -p` from PATH: this BIRD's, for the time of this suite.
    process.env.PATH = b.env.PATH;
    bird = startProcess(b.bird, ["-f", "-c", join(etc, "bird.conf"), "-s", join(dir, "bird.ctl"), "-P", join(dir, "bird.pid")], join(dir, "bird.out"));
    birdc = new BirdClient({ socketPath: join(dir, "bird.ctl"), timeoutMs: 5000 });
    const deadline = Date.now() + 10_000;
    while (
      !(await birdc.command("show status").then(
        () => true,
        () => false,
      ))
    ) {
      if (Date.now() > deadline || bird?.exitCode !== null) throw new Error(`BIRD did not start: ${readFileSync(join(dir, "bird.out"), "utf8")}`);
      await new Promise((r) => setTimeout(r, 50));
    }

    t = await startTestController({ env: { BIRD_CONTROL_SOCKET: join(dir, "bird.ctl"), BIRD_CONFIG_PATH: include } });
    bare = await startTestController();
    viewer = (await call(t.rootKey, "POST", "/v1/api-keys", { name: "v", role: "viewer" })).json().secret;
    const community = (await call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
    const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
    await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
    await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "2a00:1::/32" });
    revisionId = (await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
  });

  afterAll(async () => {
    // Apply jobs still waiting on a speaker would hold the worker (and close()) until their timeout.
    if (t) {
      const running = (await call(t.rootKey, "GET", "/v1/jobs?status=running")).json().items ?? [];
      for (const job of running) await call(t.rootKey, "POST", `/v1/jobs/${job.job_id}/cancel`);
    }
    birdc?.close();
    await Promise.all([t?.close(), bare?.close()]);
    await stopProcess(bird);
    process.env.PATH = path;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("answers 503 bird_unavailable when no local BIRD is configured", async () => {
    for (const [method, url] of [
      ["GET", "/v1/bird/status"],
      ["POST", "/v1/bird/reload"],
    ] as const) {
      const res = await bare.call(bare.rootKey, { method, url });
      expect(res.statusCode, res.body).toBe(503);
      expect(res.json()).toMatchObject({ code: "bird_unavailable" });
      expect(res.headers["content-type"]).toContain("application/problem+json");
    }
  });

  it("status and reload are for the deployment's superadmins; reload needs a local speaker", async () => {
    expect((await call(viewer, "GET", "/v1/bird/status")).statusCode).toBe(403);
    const status = await call(t.rootKey, "GET", "/v1/bird/status");
    expect(status.statusCode, status.body).toBe(200);
    expect(status.json()).toMatchObject({ speaker_id: null, bird: { reachable: true, version: b.version, router_id: "127.0.0.1" }, sessions: [] });
    expect((await call(viewer, "POST", "/v1/bird/reload")).statusCode).toBe(403);
    expect((await call(null, "GET", "/v1/bird/status")).statusCode).toBe(401);
    const none = await call(t.rootKey, "POST", "/v1/bird/reload");
    expect(none.statusCode, none.body).toBe(409);
    expect(none.json().detail).toMatch(/mode "local"/);
    expect((await call(t.rootKey, "POST", "/v1/bird/reload", { revision_id: "x" })).statusCode).toBe(400);
    expect((await call(t.rootKey, "POST", "/v1/bird/reload", { nope: 1 })).statusCode).toBe(400);
    expect((await call(t.rootKey, "POST", "/v1/bird/reload", { revision_id: 2 ** 40 })).statusCode).toBe(400);
  });

  it("reload renders the revision into BIRD_CONFIG_PATH, BIRD runs it, and the waiting apply job sees the speaker applied", async () => {
    const birdPort = await freePort();
    const created = await call(t.rootKey, "POST", "/v1/speakers", {
      name: "this-host",
      mode: "local",
      router_id: "127.0.0.1",
      asn: 65000,
      policies_json: { local_ip: "127.0.0.1", local_port: birdPort, next_hop_ipv4: "198.51.100.254", next_hop_ipv6: "2001:db8::254" },
    });
    expect(created.statusCode, created.body).toBe(201);
    speakerId = created.json().id;
    expect(created.json().enrollment_token).toBeNull();
    expect((await call(t.rootKey, "POST", "/v1/bird/reload", { revision_id: 999 })).statusCode).toBe(404);

    const peer = await call(t.rootKey, "POST", "/v1/peers", {
      name: "nobody-home",
      neighbor_address: "127.0.0.3",
      neighbor_port: await freePort("127.0.0.3"),
      remote_asn: 65002,
      multihop: true,
      speaker_ids: [speakerId],
    });
    expect(peer.statusCode, peer.body).toBe(201);
    peerId = peer.json().id;
    const applyJob = await dispatchedApply(peer.json().reconcile_job_id);

    const res = await call(t.rootKey, "POST", "/v1/bird/reload");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ speaker_id: speakerId, revision_id: revisionId, bird: { reachable: true } });
    // The include, and beside it one file per community set's static protocol, which it includes.
    const files: string[] = res.json().files;
    expect(files).toContain("rl-routes.conf");
    expect(files.filter((f) => f !== "rl-routes.conf").every((f) => /^rl-routes\.rl_static[46]_[0-9a-f]{12}\.conf$/.test(f))).toBe(true);
    expect(files.length).toBeGreaterThan(1);
    expect(res.json().sessions).toEqual([expect.objectContaining({ peer_id: peerId, neighbor_address: "127.0.0.3", remote_asn: 65002 })]);
    expect(readFileSync(include, "utf8")).toContain(`revision ${revisionId}`);
    const routes = (await birdc.command("show route table rl_v4 all")).text;
    expect(routes).toContain("11.0.0.0/16");
    expect(routes).toContain("(65000,100)");
    expect((await birdc.command("show route table rl_v6")).text).toContain("2a00:1::/32");

    expect(await untilJob(applyJob)).toMatchObject({ status: "succeeded", result: { speakers: [{ speaker_id: speakerId, status: "applied" }] } });
    expect((await call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json()).toMatchObject({
      sync_status: "in_sync",
      applied_revision_id: revisionId,
      desired_revision_id: revisionId,
      dispatch_status: "idle",
    });
  });

  it("status names the local speaker and parses BIRD's sessions", async () => {
    const res = await call(t.rootKey, "GET", "/v1/bird/status");
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      speaker_id: speakerId,
      applied_revision_id: revisionId,
      bird: { reachable: true, last_reconfiguration: expect.any(String) },
    });
    const session = res.json().sessions.find((s: any) => s.peer_id === peerId);
    expect(session).toMatchObject({ neighbor_address: "127.0.0.3", remote_asn: 65002, state: expect.stringMatching(/^(start|up)$/) });
    expect(session.protocol).toBe(`rl_peer_${peerId.replaceAll("-", "")}`);
  });

  it("a config BIRD refuses is answered 502 with BIRD's message; BIRD's file and running config stay as they were; the speaker shows the error", async () => {
    const before = readFileSync(include);
    const reconfigured = await lastReconfiguration(birdc);
    const bad = await call(t.rootKey, "POST", "/v1/peers", {
      name: "link-local",
      neighbor_address: "fe80::1",
      remote_asn: 65009,
      address_families: ["ipv6"],
      speaker_ids: [speakerId],
    });
    expect(bad.statusCode, bad.body).toBe(201);
    await dispatchedApply(bad.json().reconcile_job_id);
    const res = await call(t.rootKey, "POST", "/v1/bird/reload");
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json()).toMatchObject({ code: "apply_failed", error: { code: "bird_config_invalid" } });
    expect(res.json().error.message).toMatch(/rl-routes\.conf:\d+:\d+ Link-local addresses require defined interface/);
    expect(res.body).not.toContain(dir); // the staging path stays in the logs
    expect(readFileSync(include).equals(before)).toBe(true);
    expect(sameReconfiguration(await lastReconfiguration(birdc), reconfigured)).toBe(true);
    expect((await call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json()).toMatchObject({
      last_error: { code: "bird_config_invalid", revision_id: revisionId },
    });
    const removed = await call(t.rootKey, "DELETE", `/v1/peers/${bad.json().id}`);
    const again = await dispatchedApply(removed.json().reconcile_job_id);
    expect((await call(t.rootKey, "POST", "/v1/bird/reload")).statusCode).toBe(200);
    expect(await untilJob(again)).toMatchObject({ status: "succeeded" });
  });

  it("answers 503 bird_unavailable when BIRD's socket does not answer", async () => {
    await stopProcess(bird);
    bird = null;
    const status = await call(t.rootKey, "GET", "/v1/bird/status");
    expect(status.statusCode, status.body).toBe(503);
    expect(status.json().code).toBe("bird_unavailable");
    const reload = await call(t.rootKey, "POST", "/v1/bird/reload");
    expect(reload.statusCode, reload.body).toBe(503);
    expect(reload.json().code).toBe("bird_unavailable");
  });
});
