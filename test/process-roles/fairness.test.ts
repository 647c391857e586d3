import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { until } from "../helpers/wait.js";
import { assertBuilt, type ControllerProcess, newBootstrapKey, startControllerProcess } from "./controller-process.js";

// Two real controller processes with workers on one PostgreSQL database and one NATS server:
// one app-all (API, worker, scheduler), one worker. Tenant A floods the queue with applies to
// speakers that never answer and with refreshes; tenant B's refresh, and A's own quick jobs,
// must not wait behind that.
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

let db: TestDatabase;
let sql: postgres.Sql;
let dataDir: string;
const key = newBootstrapKey();
const running: ControllerProcess[] = [];

async function start(name: string, service: "app-all" | "worker" | "api", extra: Record<string, string> = {}): Promise<ControllerProcess> {
  return startControllerProcess(running, name, {
    APP_SERVICE: service,
    DATABASE_URL: db.url,
    NATS_URL: natsUrl,
    BOOTSTRAP_API_KEY: key,
    APP_DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
    ...extra,
  });
}

beforeAll(async () => {
  assertBuilt(["services/deploy/apply-awaiting.js", "jobs/awaiting-evaluator.js"]);
  db = await createTestDatabase();
  sql = postgres(db.url, { max: 2, onnotice: () => {} });
  dataDir = await mkdtemp(join(tmpdir(), "rlc-fair-"));
});
afterAll(async () => {
  for (const p of running.splice(0)) await p.stop();
  await sql?.end();
  await db?.drop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("a fair, bounded queue (PostgreSQL, two worker processes)", () => {
  it("tenant A's 50 waiting applies and 20 refreshes never hold up tenant B's refresh or A's quick jobs, and all of A's work ends as it should", async () => {
    const main = await start("app-all", "app-all");
    await start("worker", "worker");
    const call = (k: string, method: string, path: string, body?: unknown) => main.call(k, method, path, body);

    // Tenant B and its module, ready before A's flood.
    const b = await call(key, "POST", "/v1/tenants", { name: "tenant-b" });
    expect(b.status, JSON.stringify(b.json)).toBe(201);
    const keyB = b.json.admin_key.secret as string;
    const modB = (await call(keyB, "POST", "/v1/modules", { name: "b", type: "IP_RANGES" })).json;
    await call(keyB, "POST", `/v1/modules/${modB.id}/ip-range-entries`, { cidr: "12.34.0.0/16" });

    // Tenant A: a revision, five speakers whose agent never comes, a maintenance policy.
    const modA = (await call(key, "POST", "/v1/modules", { name: "a", type: "IP_RANGES" })).json;
    await call(key, "POST", `/v1/modules/${modA.id}/ip-range-entries`, { cidr: "12.35.0.0/16" });
    expect((await call(key, "POST", `/v1/modules/${modA.id}/refresh?wait=true`)).status).toBe(200);
    const speakers: string[] = [];
    for (let i = 0; i < 5; i++)
      speakers.push((await call(key, "POST", "/v1/speakers", { name: `silent-${i}`, router_id: `192.0.2.${i + 1}`, asn: 65000 + i })).json.speaker_id);
    const policy = (
      await call(key, "POST", "/v1/maintenance/policies", { name: "quick", interval_minutes: 60, actions: [{ type: "jobs_retention", days: 30 }] })
    ).json;

    // The flood: 50 applies (8 s timeout) and 20 refreshes, as fast as the API takes them.
    const applies: string[] = [];
    const refreshes: string[] = [];
    const floodStarted = Date.now();
    for (let i = 0; i < 50; i++) {
      const r = await call(key, "POST", "/v1/apply", { speaker_ids: speakers, timeout_seconds: 8 });
      expect(r.status, JSON.stringify(r.json)).toBe(202);
      applies.push(r.json.job_id);
      if (i % 5 === 4) {
        const f = await call(key, "POST", `/v1/modules/${modA.id}/refresh`, { force: true });
        expect(f.status, JSON.stringify(f.json)).toBe(202);
        refreshes.push(f.json.job_id);
        const g = await call(key, "POST", "/v1/modules/refresh", {});
        expect(g.status, JSON.stringify(g.json)).toBe(202);
        refreshes.push(g.json.job_id);
      }
    }
    expect(refreshes).toHaveLength(20);

    // B asks for its refresh now, and A for a maintenance run.
    const askedB = Date.now();
    const refreshB = (await call(keyB, "POST", `/v1/modules/${modB.id}/refresh`)).json.job_id as string;
    const askedRun = Date.now();
    const run = await call(key, "POST", `/v1/maintenance/policies/${policy.policy_id}/run`);
    expect(run.status, JSON.stringify(run.json)).toBe(202);
    const jobB = await until(
      "B's refresh",
      async () => {
        const j = (await call(keyB, "GET", `/v1/jobs/${refreshB}`)).json;
        return j.status === "succeeded" || j.status === "failed" ? j : null;
      },
      15_000,
    );
    const tookB = Date.now() - askedB;
    const runJob = await until(
      "A's maintenance run",
      async () => {
        const j = (await call(key, "GET", `/v1/jobs/${run.json.job_id}`)).json;
        return j.status === "succeeded" || j.status === "failed" ? j : null;
      },
      15_000,
    );
    const tookRun = Date.now() - askedRun;
    const [open] = await sql<
      { n: number }[]
    >`SELECT count(*)::int AS n FROM jobs WHERE status IN ('queued', 'running', 'awaiting') AND type IN ('apply', 'module_ingest')`;
    const queuedMs = (j: { created_at: string; started_at: string }) => Date.parse(j.started_at) - Date.parse(j.created_at);
    console.info(
      `fairness: flood enqueued in ${askedB - floodStarted} ms; B's refresh done ${tookB} ms after asked (queued ${queuedMs(jobB)} ms), ` +
        `A's maintenance run ${tookRun} ms (queued ${queuedMs(runJob)} ms); A still had ${open!.n} applies/refreshes open`,
    );
    expect(jobB.status, JSON.stringify(jobB.error)).toBe("succeeded");
    expect(tookB).toBeLessThan(5000);
    expect(runJob.status, JSON.stringify(runJob.error)).toBe("succeeded");
    expect(tookRun).toBeLessThan(5000);
    expect(open!.n).toBeGreaterThan(0); // B did not simply come after the flood

    // A's work all ends as it should: the refreshes succeed, each apply fails with every speaker timed out.
    const rows = await until(
      "A's flood to end",
      async () => {
        const r = await sql<{ id: string; type: string; status: string; result: any; attempts: number }[]>`
        SELECT id, type, status, result, attempts FROM jobs WHERE id IN ${sql([...applies, ...refreshes])}`;
        return r.every((j) => ["succeeded", "failed", "cancelled"].includes(j.status)) ? r : null;
      },
      90_000,
    );
    console.info(`fairness: A's 70 jobs all ended ${Date.now() - floodStarted} ms after the flood began`);
    for (const j of rows.filter((r) => r.type === "module_ingest")) expect(j.status).toBe("succeeded");
    for (const j of rows.filter((r) => r.type === "apply")) {
      expect(j.status).toBe("failed");
      expect(j.attempts).toBe(1);
      expect(j.result.speakers.map((s: { status: string }) => s.status)).toEqual(["timeout", "timeout", "timeout", "timeout", "timeout"]);
    }
    const [leased] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM jobs WHERE locked_by IS NOT NULL`;
    expect(leased!.n).toBe(0);
  }, 180_000);
});
