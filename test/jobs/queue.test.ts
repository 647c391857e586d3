import { AppError } from "@rlc/shared/errors";
import { createSystemClock } from "@rlc/shared/time";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMemoryBus } from "../../packages/controller/src/bus/memory-bus.js";
import { claimJob } from "../../packages/controller/src/db/jobs.js";
import type { JobContext, JobHandler } from "../../packages/controller/src/jobs/handler.js";
import { startWorker, type Worker, type WorkerOptions } from "../../packages/controller/src/jobs/worker.js";
import { createJobService, enqueueJob } from "../../packages/controller/src/services/operations/jobs.js";
import { INTERNAL_JOB_DETAIL } from "../../packages/controller/src/services/operations/jobs-problem.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

let t: TestController;
let tenantA: string;
let tenantB: string;
let keyB: string;
const bus = createMemoryBus();
const silent = { warn() {}, error() {}, info() {}, debug() {} } as never;

/** A handler whose runs the test steers: each run waits until the test releases it. */
function steerable(type: JobHandler["type"]) {
  const started: JobContext[] = [];
  const releases = new Map<string, (v: "ok" | "throw" | "app-error" | "checkpoint") => void>();
  const handler: JobHandler = {
    type,
    async run(ctx) {
      started.push(ctx);
      const how = await new Promise<"ok" | "throw" | "app-error" | "checkpoint">((r) => releases.set(ctx.job.id, r));
      if (how === "throw") throw new Error("upstream hiccup");
      if (how === "app-error") throw new AppError("revision_guard_tripped", "would withdraw too much");
      if (how === "checkpoint") await ctx.checkpoint();
      return { done: ctx.job.id };
    },
  };
  const runs = (jobId: string) => started.filter((c) => c.job.id === jobId).length;
  const waitStarted = async (jobId: string, attempt = 1) => {
    for (let i = 0; i < 200 && runs(jobId) < attempt; i++) await new Promise((r) => setTimeout(r, 25));
    expect(runs(jobId), `job ${jobId} attempt ${attempt} started`).toBeGreaterThanOrEqual(attempt);
  };
  /** Lets attempt `attempt` of the job end the way `how` says. */
  const release = async (jobId: string, how: "ok" | "throw" | "app-error" | "checkpoint" = "ok", attempt = 1) => {
    await waitStarted(jobId, attempt);
    releases.get(jobId)!(how);
  };
  return { handler, started, waitStarted, release };
}

async function enqueue(tenantId: string, type: JobHandler["type"] = "revision_prune", maxAttempts = 3) {
  const after: (() => void)[] = [];
  const row = await t.controller.db.sql.begin((tx) =>
    enqueueJob(tx, bus, { tenantId, type, params: { n: 1 }, createdBy: "test", now: new Date(), afterCommit: (f) => after.push(f), maxAttempts }),
  );
  for (const f of after) f();
  return row.id;
}

async function status(id: string) {
  const [row] = await t.controller.db.sql<
    { status: string; attempts: number; error: any; result: any }[]
  >`SELECT status, attempts, error, result FROM jobs WHERE id = ${id}`;
  return row!;
}

const workers: Worker[] = [];
/** A worker on a queue of its own over the test's bus (claims bounded by `tenantMaxRunning`, default 2). */
const startW = (handler: JobHandler, extra: Partial<WorkerOptions> & { tenantMaxRunning?: number } = {}) => {
  const { tenantMaxRunning, ...options } = extra;
  const queue = createJobService({ audit: t.controller.deps.services.audit, bus, sql: t.controller.db.sql, tenantMaxRunning });
  const w = startWorker({ queue, clock: createSystemClock(), logger: silent, handlers: [handler], pollMs: 100, ...options });
  workers.push(w);
  return w;
};

beforeAll(async () => {
  // The test runs its own steerable workers: its controller runs none (the api role), so no
  // registered handler (revision_prune has one) races them for the jobs.
  // A queue cap of 2 (JOBS_TENANT_MAX_QUEUED): the cap test fills it; the others enqueue as
  // "test", which no cap bounds.
  t = await startTestController({ env: { APP_SERVICE: "api", JOBS_TENANT_MAX_QUEUED: "2" } });
  tenantA = (await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;
  const b = (await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "jobs-b" } })).json();
  tenantB = b.tenant_id;
  keyB = b.admin_key.secret;
});
afterAll(async () => {
  for (const w of workers) await w.stop();
  await t?.close();
});

describe("job queue", () => {
  it("runs a job to success and shows it through the API", async () => {
    const s = steerable("revision_prune");
    const w = startW(s.handler);
    const id = await enqueue(tenantA);
    await s.waitStarted(id);
    expect((await status(id)).status).toBe("running");
    await s.release(id);
    await until("the job status", async () => (await status(id)).status === "succeeded");
    const res = await t.call(t.rootKey, { method: "GET", url: `/v1/jobs/${id}` });
    expect(res.json()).toMatchObject({ job_id: id, type: "revision_prune", status: "succeeded", result: { done: id }, attempts: 1, error: null });
    const list = await t.call(t.rootKey, { method: "GET", url: "/v1/jobs?status=succeeded&type=revision_prune" });
    expect(list.json().items.map((j: { job_id: string }) => j.job_id)).toContain(id);
    expect((await t.call(keyB, { method: "GET", url: `/v1/jobs/${id}` })).statusCode).toBe(404);
    await w.stop();
  });

  it("cancels a queued job at once, a running one at its next step, and refuses a finished one", async () => {
    const queued = await enqueue(tenantA);
    const c1 = await t.call(t.rootKey, { method: "POST", url: `/v1/jobs/${queued}/cancel` });
    expect(c1.statusCode).toBe(200);
    expect(c1.json()).toMatchObject({ status: "cancelled", cancel_requested: true });

    const s = steerable("revision_prune");
    const w = startW(s.handler);
    const running = await enqueue(tenantA);
    await s.waitStarted(running);
    const c2 = await t.call(t.rootKey, { method: "POST", url: `/v1/jobs/${running}/cancel` });
    expect(c2.json()).toMatchObject({ status: "running", cancel_requested: true });
    await s.release(running, "checkpoint");
    await until("the job status", async () => (await status(running)).status === "cancelled");
    expect((await status(running)).result).toBeNull();

    const again = await t.call(t.rootKey, { method: "POST", url: `/v1/jobs/${running}/cancel` });
    expect(again.statusCode).toBe(409);
    expect(again.json().code).toBe("conflict");
    // The queued job was never run.
    expect(s.started.some((c) => c.job.id === queued)).toBe(false);
    const audit = await t.call(t.rootKey, { method: "GET", url: "/v1/audit?action=cancel" });
    expect(audit.json().items).toHaveLength(2);
    await w.stop();
  });

  it("retries an attempt that threw and fails for good on an AppError", async () => {
    const s = steerable("revision_prune");
    const w = startW(s.handler);
    const flaky = await enqueue(tenantA);
    await s.release(flaky, "throw");
    await until("the job status", async () => (await status(flaky)).status === "queued");
    // The thrown message is logged, not stored: an internal error's text (SQL, paths) stays out of the job.
    expect((await status(flaky)).error).toMatchObject({ code: "internal", status: 500 });
    expect((await status(flaky)).error.detail).not.toContain("upstream hiccup");
    await t.controller.db.sql`UPDATE jobs SET run_after = now() WHERE id = ${flaky}`;
    await s.release(flaky, "ok", 2);
    await until("the job status", async () => (await status(flaky)).status === "succeeded");
    expect((await status(flaky)).attempts).toBe(2);

    const guarded = await enqueue(tenantA);
    await s.release(guarded, "app-error");
    await until("the job status", async () => (await status(guarded)).status === "failed");
    expect((await status(guarded)).error).toMatchObject({ code: "revision_guard_tripped", status: 422 });
    expect((await status(guarded)).attempts).toBe(1);
    await w.stop();
  });

  it("takes up again a job whose worker died (its lease ran out)", async () => {
    const id = await enqueue(tenantA);
    // A worker claims it and dies at once: it never renews its 300 ms lease.
    const dead = await claimJob(t.controller.db.sql, {
      workerId: "dead-worker",
      now: new Date(),
      leaseMs: 300,
      types: ["revision_prune"],
      tenantMaxRunning: 10,
      attemptsCap: 5,
    });
    expect(dead?.id).toBe(id);
    const s = steerable("revision_prune");
    const w = startW(s.handler);
    await new Promise((r) => setTimeout(r, 400));
    await s.release(id);
    await until("the job status", async () => (await status(id)).status === "succeeded");
    expect((await status(id)).attempts).toBe(2);
    await w.stop();
  });

  it("one tenant's backlog does not block another tenant's job", async () => {
    const aJobs = [await enqueue(tenantA), await enqueue(tenantA), await enqueue(tenantA)];
    const bJob = await enqueue(tenantB);
    const claim = (workerId: string) =>
      claimJob(t.controller.db.sql, { workerId, now: new Date(), leaseMs: 60_000, types: ["revision_prune"], tenantMaxRunning: 10, attemptsCap: 5 });
    // A's oldest goes first; while it runs, B (nothing running) comes before A's second job.
    expect((await claim("w1"))?.id).toBe(aJobs[0]);
    expect((await claim("w2"))?.id).toBe(bJob);
    expect((await claim("w3"))?.id).toBe(aJobs[1]);
    await t.controller.db
      .sql`UPDATE jobs SET status = 'succeeded', locked_by = NULL WHERE id IN ${t.controller.db.sql([...aJobs, bJob] as [...string[], string])}`;
  });

  it("a job whose worker is lost on every attempt ends failed, reason poisoned, and is not taken again", async () => {
    const id = await enqueue(tenantA, "revision_prune", 2);
    for (const n of [1, 2]) {
      const dead = await claimJob(t.controller.db.sql, {
        workerId: `dead-${n}`,
        now: new Date(),
        leaseMs: 100,
        types: ["revision_prune"],
        tenantMaxRunning: 10,
        attemptsCap: 5,
      });
      expect(dead?.id).toBe(id);
      await new Promise((r) => setTimeout(r, 150));
    }
    // Attempts used up: no claim takes it again.
    expect(
      await claimJob(t.controller.db.sql, { workerId: "w", now: new Date(), leaseMs: 100, types: ["revision_prune"], tenantMaxRunning: 10, attemptsCap: 5 }),
    ).toBeUndefined();
    const s = steerable("revision_prune");
    const w = startW(s.handler);
    await until("the job status", async () => (await status(id)).status === "failed");
    expect((await status(id)).error).toMatchObject({ code: "internal", reason: "poisoned" });
    expect((await status(id)).attempts).toBe(2);
    expect(s.started).toHaveLength(0);
    await w.stop();
  });

  it("an internal error's text never reaches job.error.detail", async () => {
    const leaky: JobHandler = {
      type: "revision_prune",
      maxAttempts: 1,
      async run() {
        throw new Error('relation "revisions" does not exist at /srv/controller/dist/db/revisions.js: SELECT * FROM revisions');
      },
    };
    const w = startW(leaky);
    const id = await enqueue(tenantA, "revision_prune", 1);
    await until("the job status", async () => (await status(id)).status === "failed");
    const error = (await t.call(t.rootKey, { method: "GET", url: `/v1/jobs/${id}` })).json().error;
    expect(error).toMatchObject({ code: "internal", detail: INTERNAL_JOB_DETAIL });
    expect(JSON.stringify(error)).not.toMatch(/SELECT|\/srv|relation/);
    await w.stop();
  });

  it("a tenant running its cap of jobs is passed over; another tenant's job is claimed", async () => {
    const claim = (workerId: string) =>
      claimJob(t.controller.db.sql, { workerId, now: new Date(), leaseMs: 60_000, types: ["revision_prune"], tenantMaxRunning: 1, attemptsCap: 5 });
    const a1 = await enqueue(tenantA);
    const a2 = await enqueue(tenantA);
    expect((await claim("w1"))?.id).toBe(a1);
    expect(await claim("w2")).toBeUndefined(); // A runs its one; B has nothing
    const b1 = await enqueue(tenantB);
    expect((await claim("w3"))?.id).toBe(b1);
    await t.controller.db.sql`UPDATE jobs SET status = 'succeeded', locked_by = NULL WHERE id IN ${t.controller.db.sql([a1, b1])}`;
    expect((await claim("w4"))?.id).toBe(a2);
    await t.controller.db.sql`UPDATE jobs SET status = 'succeeded', locked_by = NULL WHERE id = ${a2}`;
  });

  it("quick jobs have a lane of their own: they run while long jobs hold every general slot", async () => {
    const long = steerable("module_ingest");
    long.handler.lane = "long";
    const quick = steerable("revision_prune");
    const w = startW(long.handler, { handlers: [long.handler, quick.handler], concurrency: 2, quickSlots: 1, tenantMaxRunning: 10 });
    const l1 = await enqueue(tenantA, "module_ingest");
    const l2 = await enqueue(tenantA, "module_ingest");
    await long.waitStarted(l1);
    await long.waitStarted(l2);
    const q = await enqueue(tenantA);
    await quick.release(q);
    await until("the job status", async () => (await status(q)).status === "succeeded", 5000);
    expect((await status(l1)).status).toBe("running");
    await long.release(l1);
    await long.release(l2);
    await until("the job status", async () => (await status(l1)).status === "succeeded" && (await status(l2)).status === "succeeded");
    await w.stop();
  });

  it("an API caller over the tenant's queue cap gets 429 too_many_jobs with Retry-After", async () => {
    const m = (await t.call(keyB, { method: "POST", url: "/v1/modules", payload: { name: "capped", type: "IP_RANGES" } })).json();
    const refresh = () => t.call(keyB, { method: "POST", url: `/v1/modules/${m.id}/refresh` });
    expect((await refresh()).statusCode).toBe(202);
    expect((await refresh()).statusCode).toBe(202);
    const over = await refresh();
    expect(over.statusCode).toBe(429);
    expect(over.headers["retry-after"]).toBe("10");
    expect(over.json()).toMatchObject({ code: "too_many_jobs", status: 429, queued_jobs: 2, max_queued_jobs: 2 });
    const queued = (await t.call(keyB, { method: "GET", url: "/v1/jobs?status=queued" })).json().items;
    expect(queued).toHaveLength(2);
    // Another tenant is not held by B's queue.
    const other = await t.call(t.rootKey, { method: "POST", url: "/v1/modules", payload: { name: "free", type: "IP_RANGES" } });
    expect((await t.call(t.rootKey, { method: "POST", url: `/v1/modules/${other.json().id}/refresh` })).statusCode).toBe(202);
    await t.controller.db.sql`UPDATE jobs SET status = 'cancelled' WHERE status = 'queued'`;
  });
});
