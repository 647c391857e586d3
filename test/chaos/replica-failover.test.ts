import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentProcess } from "../helpers/agent-process.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startBird, stopProcess } from "../helpers/lab-daemons.mjs";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";
import { assertBuilt, type ControllerProcess, freePort, newBootstrapKey, startControllerProcess } from "../process-roles/controller-process.js";

// Two API replicas, a worker and a scheduler on one PostgreSQL and NATS, all with one data key
// file; two rl-agents, each driving a BIRD of its own, with both replicas in RL_GRPC_URL and
// RL_CONTROLLER_URL. The replica that holds the agents' Watch streams is killed with -9: the
// streams appear on the other one (its rlc_grpc_watch_streams), and an apply issued right after
// the kill reaches both agents.
const missing = ["bird"].filter((bin) => !tool(bin).available);
const title = "a controller replica killed under its agents";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const AGENTS = 2;

describe.skipIf(missing.length > 0 && process.env.CI !== "true")(missing.length ? `${title} (skipped: ${missing.join(", ")} not on PATH)` : title, () => {
  const running: ControllerProcess[] = [];
  const agents: { speakerId: string; metricsPort: number; process: ReturnType<typeof startAgentProcess> }[] = [];
  const birds: ChildProcess[] = [];
  const key = newBootstrapKey();
  let dir = "";
  let db: TestDatabase;
  let a: ControllerProcess;
  let b: ControllerProcess;
  const grpcPorts: number[] = [];
  let moduleId = "";

  async function ok(c: ControllerProcess, method: string, path: string, body?: unknown, want?: number) {
    const r = await c.call(key, method, path, body);
    if (want ? r.status !== want : r.status >= 300) {
      throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.json)}\n${agents.map((g) => g.process.log().slice(-1500)).join("\n")}`);
    }
    return r.json;
  }
  /** The Watch streams a replica holds, from its public /metrics; null when it does not answer. */
  async function watchStreams(c: ControllerProcess): Promise<number | null> {
    const text = await fetch(`${c.base}/metrics`).then(
      (r) => r.text(),
      () => null,
    );
    const m = text ? /^rlc_grpc_watch_streams (\d+)$/m.exec(text) : null;
    return m ? Number(m[1]) : null;
  }
  async function jobDone(c: ControllerProcess, jobId: string, ms: number) {
    return until(
      `job ${jobId} to end`,
      async () => {
        const job = await ok(c, "GET", `/v1/jobs/${jobId}`);
        return job.status === "succeeded" || job.status === "failed" ? job : null;
      },
      ms,
      200,
    );
  }
  /** A new entry and a refresh: the next revision, not applied yet. */
  async function nextRevision(c: ControllerProcess, cidr: string): Promise<number> {
    await ok(c, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr }, 201);
    const job = await ok(c, "POST", "/v1/modules/refresh?wait=true");
    expect(job.status, JSON.stringify(job)).toBe("succeeded");
    return job.result.revision_id;
  }

  beforeAll(async () => {
    assertBuilt(["metrics/controller-metrics.js"]);
    dir = mkdtempSync(join(tmpdir(), "rl-chaos-failover-"));
    db = await createTestDatabase();
    const keyFile = join(dir, "secret.key");
    writeFileSync(keyFile, randomBytes(32).toString("base64"), { mode: 0o600 });
    const shared = { DATABASE_URL: db.url, NATS_URL: natsUrl, APP_SECRET_KEY_FILE: keyFile, BOOTSTRAP_API_KEY: key };
    grpcPorts.push(await freePort(), await freePort());
    // One after the other: the first makes the gRPC CA (grpc_tls) that the second then serves too.
    a = await startControllerProcess(running, "api-a", { ...shared, APP_SERVICE: "api", APP_DATA_DIR: join(dir, "a"), GRPC_PORT: String(grpcPorts[0]) });
    b = await startControllerProcess(running, "api-b", { ...shared, APP_SERVICE: "api", APP_DATA_DIR: join(dir, "b"), GRPC_PORT: String(grpcPorts[1]) });
    await startControllerProcess(running, "worker", { ...shared, APP_SERVICE: "worker", APP_DATA_DIR: join(dir, "w") });
    await startControllerProcess(running, "scheduler", { ...shared, APP_SERVICE: "scheduler", APP_DATA_DIR: join(dir, "s") });

    await ok(a, "PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 2 } });
    moduleId = (await ok(a, "POST", "/v1/modules", { name: "held", type: "IP_RANGES" })).id;
    for (let i = 0; i < AGENTS; i++) {
      const speaker = await ok(a, "POST", "/v1/speakers", { name: `edge-failover-${i}`, mode: "remote", router_id: "127.0.0.1", asn: 65000 });
      const home = join(dir, `agent-${i}`);
      const etc = join(home, "etc");
      mkdirSync(etc, { recursive: true });
      // Full mode: the agent writes bird.conf itself; BIRD starts on a bare one.
      writeFileSync(join(etc, "bird.conf"), ["router id 127.0.0.1;", "protocol device {", "}", ""].join("\n"));
      birds.push(
        await startBird({
          config: join(etc, "bird.conf"),
          socketPath: join(home, "bird.ctl"),
          pidFile: join(home, "bird.pid"),
          logFile: join(home, "bird.out"),
        }),
      );
      const metricsPort = await freePort();
      const agentProcess = startAgentProcess({
        controllerUrl: `${a.base},${b.base}`,
        enrollmentToken: speaker.enrollment_token,
        dir: home,
        etc,
        env: { RL_GRPC_URL: grpcPorts.map((p) => `127.0.0.1:${p}`).join(","), RL_METRICS_LISTEN: `127.0.0.1:${metricsPort}` },
      });
      agents.push({ speakerId: speaker.id, metricsPort, process: agentProcess });
    }
    await ok(a, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "11.1.0.0/16" }, 201);
    await ok(a, "POST", "/v1/modules/refresh?wait=true");
    const first = await ok(a, "POST", "/v1/apply", { timeout_seconds: 60 }, 202);
    expect((await jobDone(a, first.job_id, 90_000)).status).toBe("succeeded");
  }, 180_000);

  afterAll(async () => {
    const alive = running.find((c) => c.alive && c.name.startsWith("api"));
    // Apply jobs still waiting on an agent would hold the worker (and its stop) until their timeout.
    if (alive)
      for (const job of (await alive.call(key, "GET", "/v1/jobs?status=running")).json?.items ?? [])
        await alive.call(key, "POST", `/v1/jobs/${job.job_id}/cancel`);
    await Promise.all(agents.map((g) => stopProcess(g.process.child)));
    for (const c of running.splice(0)) await c.stop();
    await Promise.all(birds.map((bird) => stopProcess(bird)));
    await db?.drop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("kill -9 of the replica the agents are connected to: they hold their Watch streams on the other within 10 s, and an apply issued at the kill reaches every agent", {
    timeout: 180_000,
  }, async () => {
    // RL_GRPC_URL's first endpoint is the one the agents start on.
    await until("both agents' Watch streams on the first replica", async () => (await watchStreams(a)) === AGENTS, 20_000);
    expect(await watchStreams(b)).toBe(0);
    const revision = await nextRevision(a, "11.2.0.0/16");

    const killedAt = Date.now();
    a.child.kill("SIGKILL");
    await a.exited;
    const apply = await ok(b, "POST", "/v1/apply", { timeout_seconds: 60 }, 202);
    await until("both agents' Watch streams on the second replica", async () => (await watchStreams(b)) === AGENTS, 10_000, 50);
    const movedMs = Date.now() - killedAt;
    const job = await jobDone(b, apply.job_id, 90_000);
    const appliedMs = Date.now() - killedAt;
    console.log(
      `replica killed: ${AGENTS} agents' Watch streams on the other replica after ${movedMs} ms; the apply issued at the kill ended ${job.status} after ${appliedMs} ms`,
    );

    expect(movedMs).toBeLessThanOrEqual(10_000);
    expect(job.status, JSON.stringify(job)).toBe("succeeded");
    for (const agent of agents) {
      expect((await ok(b, "GET", `/v1/speakers/${agent.speakerId}`)).applied_revision_id).toBe(revision);
      const health = await (await fetch(`http://127.0.0.1:${agent.metricsPort}/healthz`)).json();
      expect(health.controller_endpoints).toEqual({ http: b.base, grpc: `127.0.0.1:${grpcPorts[1]}` });
    }
  });
});
