import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { SCHEDULER_LOCK } from "../../packages/controller/src/scheduler/scheduler.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { until } from "../helpers/wait.js";
import { assertBuilt, type ControllerProcess, newBootstrapKey, startControllerProcess } from "./controller-process.js";

// Real controller processes (`node packages/controller/dist/server.js`, as deployed) with their
// roles split by APP_SERVICE, on one PostgreSQL database and one NATS server.
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const LEADER = "this process now runs the periodic tasks";

let db: TestDatabase;
let sql: postgres.Sql;
let dataDir: string;
const key = newBootstrapKey();
const running: ControllerProcess[] = [];

async function start(name: string, service: "api" | "worker" | "scheduler"): Promise<ControllerProcess> {
  return startControllerProcess(running, name, {
    APP_SERVICE: service,
    DATABASE_URL: db.url,
    NATS_URL: natsUrl,
    BOOTSTRAP_API_KEY: key,
    APP_DATA_DIR: dataDir,
  });
}

/** Backends of this database holding the scheduler's advisory lock (a bigint key: classid 0, objid the key, objsubid 1). */
const lockHolders = async () =>
  (
    await sql<{ pid: number }[]>`
      SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
      WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()
        AND l.classid = 0 AND l.objid = ${SCHEDULER_LOCK} AND l.objsubid = 1`
  ).map((r) => r.pid);

beforeAll(async () => {
  assertBuilt(["routes/v1/maintenance.js", "routes/v1/modules.js"]);
  db = await createTestDatabase();
  sql = postgres(db.url, { max: 2, onnotice: () => {} });
  dataDir = await mkdtemp(join(tmpdir(), "rlc-roles-"));
});
afterEach(async () => {
  for (const p of running.splice(0)) await p.stop();
});
afterAll(async () => {
  for (const p of running.splice(0)) await p.stop("SIGKILL");
  await sql?.end();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("process roles", () => {
  it("api + worker: a refresh asked of the api process is done once, by the worker process", async () => {
    const api = await start("api", "api");
    const moduleRes = await api.call(key, "POST", "/v1/modules", { name: "roles", type: "IP_RANGES" });
    expect(moduleRes.status, JSON.stringify(moduleRes.json)).toBe(201);
    const moduleId = moduleRes.json.id as string;
    expect((await api.call(key, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "11.22.0.0/16" })).status).toBe(201);

    const accepted = await api.call(key, "POST", `/v1/modules/${moduleId}/refresh`);
    expect(accepted.status).toBe(202);
    const jobId = accepted.json.job_id as string;
    // The api role runs no worker: the job waits for one.
    await new Promise((r) => setTimeout(r, 2000));
    expect((await api.call(key, "GET", `/v1/jobs/${jobId}`)).json.status).toBe("queued");

    const worker = await start("worker", "worker");
    const job = await until(
      "the worker process to finish the refresh",
      async () => {
        const j = (await api.call(key, "GET", `/v1/jobs/${jobId}`)).json;
        return j.status === "succeeded" || j.status === "failed" ? j : null;
      },
      30_000,
    );
    expect(job, JSON.stringify(job.error)).toMatchObject({ status: "succeeded", attempts: 1, result: { unchanged: false } });
    expect(await sql`SELECT id FROM jobs`).toHaveLength(1);
    const revisions = await sql<{ revision_id: number }[]>`SELECT revision_id FROM revisions`;
    expect(revisions.map((r) => r.revision_id)).toEqual([job.result.revision_id]);
    const prefixes = (await api.call(key, "GET", `/v1/revisions/${job.result.revision_id}/prefixes`)).json.items;
    expect(prefixes.map((p: { prefix: string }) => p.prefix)).toEqual(["11.22.0.0/16"]);

    // ?wait=true on the api process: the worker's "finished" notice crosses NATS.
    const started = Date.now();
    const waited = await api.call(key, "POST", `/v1/modules/${moduleId}/refresh?wait=true`);
    expect(waited.status, JSON.stringify(waited.json)).toBe(200);
    expect(waited.json).toMatchObject({ status: "succeeded", attempts: 1, result: { unchanged: true } });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await sql`SELECT id FROM jobs`).toHaveLength(2);
    expect(await sql`SELECT revision_id FROM revisions`).toHaveLength(1);
    expect(worker.alive && api.alive).toBe(true);
  }, 90_000);

  it("two schedulers: exactly one leads; kill -9 of the leader hands its periodic work to the other within a minute", async () => {
    const api = await start("api", "api");
    const a = await start("scheduler-a", "scheduler");
    const b = await start("scheduler-b", "scheduler");
    const leader = await until("a leader", async () => [a, b].find((p) => p.has(LEADER)), 15_000);
    const follower = leader === a ? b : a;
    // Longer than one election interval (5 s): the follower tried, and failed, at least once.
    await new Promise((r) => setTimeout(r, 6000));
    expect([a, b].filter((p) => p.has(LEADER))).toEqual([leader]);
    const [holder, ...others] = await lockHolders();
    expect(others).toEqual([]);
    expect(holder).toBeDefined();

    // A maintenance policy whose run is due: a periodic task's effect to watch.
    const created = await api.call(key, "POST", "/v1/maintenance/policies", {
      name: "handover",
      interval_minutes: 5,
      actions: [{ type: "jobs_retention", days: 30 }],
    });
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const policyId = created.json.policy_id as string;
    await sql`UPDATE maintenance_policies SET next_run_at = now() - interval '1 second' WHERE id = ${policyId}`;

    leader.child.kill("SIGKILL");
    const killedAt = Date.now();
    await leader.exited;
    await follower.waitFor(LEADER, 60_000);
    const newHolder = await until(
      "the lock to have one new holder",
      async () => {
        const holders = await lockHolders();
        return holders.length === 1 && holders[0] !== holder ? holders[0] : null;
      },
      60_000,
    );
    const handoverMs = Date.now() - killedAt;
    console.info(`scheduler hand-over after kill -9: ${handoverMs} ms (lock backend ${holder} → ${newHolder})`);
    expect(handoverMs).toBeLessThan(60_000);

    // The new leader runs the due policy: one run job (no worker here, so it stays queued).
    const jobs = await until(
      "the policy's run job",
      async () => {
        const rows = await sql<{ id: string; created_by: string }[]>`
        SELECT id, created_by FROM jobs WHERE type = 'maintenance_policy_run' AND params->>'policy_id' = ${policyId}`;
        return rows.length ? rows : null;
      },
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(await sql`SELECT id FROM jobs WHERE type = 'maintenance_policy_run'`).toHaveLength(1);
    expect(jobs[0]!.created_by).toBe("auto:scheduler");
    const [policy] = await sql<{ next_run_at: Date }[]>`SELECT next_run_at FROM maintenance_policies WHERE id = ${policyId}`;
    expect(policy!.next_run_at.getTime()).toBeGreaterThan(Date.now() + 4 * 60_000);
  }, 120_000);
});
