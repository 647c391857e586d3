import { randomUUID } from "node:crypto";
import { eventSubjects } from "@rlc/proto";
import { AppError } from "@rlc/shared/errors";
import type { JobType } from "@rlc/shared/schemas";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { openTestDatabase } from "../../../../test/helpers/db.js";
import { createMemoryBus } from "../bus/memory-bus.js";
import type { Database } from "../db/connect.js";
import type { JobRow } from "../db/jobs.js";
import { createAuditWriter } from "../services/access/audit.js";
import { createJobService, type JobQueue } from "../services/operations/jobs.js";
import { INTERNAL_JOB_DETAIL } from "../services/operations/jobs-problem.js";
import type { JobRunCaps } from "../services/operations/jobs-runs.js";
import type { JobContext, JobHandler } from "./handler.js";
import { startWorker, type Worker } from "./worker.js";

// The worker against a real database (PostgreSQL, or the embedded one with TEST_DB=embedded):
// what a job's row says after each way a run can end, and the job_finished events the ends
// announce. The job queue service makes every change; the worker decides nothing but when.

let database: Database & { close(): Promise<void> };
const bus = createMemoryBus();
const tenantId = randomUUID();
const silent = { warn() {}, error() {}, info() {}, debug() {} } as never;
/** The worker's clock: the system's, or stopped at `stoppedAt` (which the test moves) where a test needs time to stand still. */
let stoppedAt: number | null = null;
const clock = { now: () => stoppedAt ?? Date.now(), sleep: (ms: number) => new Promise<void>((r) => setTimeout(r, ms)) };
const finished: { job_id: string; status: string; error_code: string | null }[] = [];
const failures: string[] = [];
const outcomes: string[] = [];
const metrics = {
  failed: (type: string, code: string) => void failures.push(`${type}:${code}`),
  ran: (_type: string, outcome: string) => void outcomes.push(outcome),
};
let workers: Worker[] = [];

const queueOf = (caps: JobRunCaps = {}): JobQueue => createJobService({ audit: createAuditWriter({ pushEnabled: false }), bus, sql: database.sql, ...caps });

function start(handlers: JobHandler[], queue = queueOf()) {
  const worker = startWorker({ queue, clock: clock as never, logger: silent, handlers, concurrency: 1, quickSlots: 0, pollMs: 25, metrics: metrics as never });
  workers.push(worker);
  return worker;
}

async function enqueue(type: JobType, maxAttempts = 3, queue = queueOf()): Promise<string> {
  const after: (() => void)[] = [];
  const row = await database.sql.begin((tx) =>
    queue.enqueue(tx, { tenantId, type, params: {}, createdBy: "test", now: new Date(), afterCommit: (f) => after.push(f), maxAttempts }),
  );
  for (const f of after) f();
  return row.id;
}

const rowOf = async (id: string) => (await database.sql<JobRow[]>`SELECT * FROM jobs WHERE id = ${id}`)[0]!;
async function until(what: string, check: () => Promise<boolean>) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}
const statusIs = (id: string, status: string) => until(`job ${id} ${status}`, async () => (await rowOf(id)).status === status);
const eventsOf = (id: string) => finished.filter((e) => e.job_id === id);

/** A handler whose run the test holds until it lets it go. */
function held(type: JobType, body: (ctx: JobContext) => Promise<Record<string, unknown> | undefined>, extra: Partial<JobHandler> = {}) {
  let release: () => void = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const started: string[] = [];
  const handler: JobHandler = {
    type,
    ...extra,
    async run(ctx) {
      started.push(ctx.job.id);
      await gate;
      return body(ctx);
    },
  };
  return { handler, started, release: () => release() };
}

beforeAll(async () => {
  database = await openTestDatabase();
  await database.sql`INSERT INTO tenants (id, name, created_at) VALUES (${tenantId}, ${`worker-${tenantId.slice(0, 8)}`}, now())`;
  await database.sql`CREATE TABLE worker_test_effects (job_id text PRIMARY KEY)`;
  bus.subscribe(eventSubjects.jobFinished("*", "*"), (m) => void finished.push(m as never));
}, 60_000);
afterEach(async () => {
  for (const w of workers) await w.stop();
  workers = [];
  stoppedAt = null;
  // Whatever a test left queued must not reach the next test's worker.
  await database.sql`UPDATE jobs SET status = 'cancelled' WHERE status IN ('queued', 'running', 'awaiting')`;
});
afterAll(async () => {
  await database?.close();
});

describe("job worker", () => {
  it("a run that returns ends the job succeeded with its result, announced once", async () => {
    start([{ type: "revision_prune", run: async (ctx) => ({ pruned: ctx.job.id }) }]);
    const id = await enqueue("revision_prune");
    await statusIs(id, "succeeded");
    const row = await rowOf(id);
    expect(row).toMatchObject({ result: { pruned: id }, attempts: 1, error: null, locked_by: null });
    expect(row.finished_at).not.toBeNull();
    await until("the event", async () => eventsOf(id).length > 0);
    expect(eventsOf(id)).toEqual([expect.objectContaining({ status: "succeeded", error_code: null })]);
  });

  it("ctx.complete writes the effect and the job's end in one transaction; a cancel asked first leaves neither", async () => {
    const write = (ctx: JobContext) =>
      ctx.complete(async (tx) => {
        await tx`INSERT INTO worker_test_effects (job_id) VALUES (${ctx.job.id})`;
        return { written: true };
      });
    const kept = held("revision_prune", write);
    start([kept.handler]);
    const done = await enqueue("revision_prune");
    await until("the run", async () => kept.started.includes(done));
    kept.release();
    await statusIs(done, "succeeded");
    expect((await rowOf(done)).result).toEqual({ written: true });
    expect(await database.sql`SELECT 1 FROM worker_test_effects WHERE job_id = ${done}`).toHaveLength(1);

    const stopped = held("revision_prune", write);
    await workers[0]!.stop();
    workers = [];
    start([stopped.handler]);
    const cancelled = await enqueue("revision_prune");
    await until("the run", async () => stopped.started.includes(cancelled));
    await database.sql`UPDATE jobs SET cancel_requested = true WHERE id = ${cancelled}`;
    stopped.release();
    await statusIs(cancelled, "cancelled");
    expect(await database.sql`SELECT 1 FROM worker_test_effects WHERE job_id = ${cancelled}`).toHaveLength(0);
    expect((await rowOf(cancelled)).error).toMatchObject({ code: "conflict" });
    await until("the event", async () => eventsOf(cancelled).length > 0);
    expect(eventsOf(cancelled)).toEqual([expect.objectContaining({ status: "cancelled", error_code: "conflict" })]);
  });

  it("an internal error is retried after a backoff, keeping no internal text; its last attempt fails the job", async () => {
    let runs = 0;
    // The worker's time stands still (a minute ahead, so the job is due): the backoff passes only when the test moves it.
    stoppedAt = Date.now() + 60_000;
    start([
      {
        type: "revision_prune",
        run: async () => {
          runs++;
          throw new Error("connection reset by /srv/secret/path");
        },
      },
    ]);
    const id = await enqueue("revision_prune", 2);
    await until("a retry", async () => (await rowOf(id)).attempts === 1 && (await rowOf(id)).status === "queued");
    const retried = await rowOf(id);
    expect(retried).toMatchObject({ status: "queued", attempts: 1 });
    // 2 s after the failed attempt (the first backoff), with the generic problem.
    expect(retried.run_after.getTime() - retried.updated_at.getTime()).toBe(2000);
    expect(retried.error).toMatchObject({ code: "internal", detail: INTERNAL_JOB_DETAIL });
    expect(eventsOf(id)).toEqual([]);
    stoppedAt += 5000; // the backoff has passed
    await statusIs(id, "failed");
    expect(runs).toBe(2);
    expect(await rowOf(id)).toMatchObject({ attempts: 2, error: { code: "internal", detail: INTERNAL_JOB_DETAIL } });
    expect(JSON.stringify((await rowOf(id)).error)).not.toContain("/srv/secret");
    expect(failures).toContain("revision_prune:internal");
  });

  it("an AppError fails the job at once with its problem; the handler's maxAttempts bounds the job's", async () => {
    start([
      {
        type: "revision_prune",
        run: async () => {
          throw new AppError("revision_guard_tripped", "would withdraw too much");
        },
      },
      {
        type: "peer_reconcile",
        maxAttempts: 1,
        run: async () => {
          throw new Error("flaky");
        },
      },
    ]);
    const guarded = await enqueue("revision_prune", 3);
    const once = await enqueue("peer_reconcile", 3);
    await statusIs(guarded, "failed");
    expect(await rowOf(guarded)).toMatchObject({ attempts: 1, error: { code: "revision_guard_tripped", detail: "would withdraw too much", status: 422 } });
    await statusIs(once, "failed");
    expect(await rowOf(once)).toMatchObject({ attempts: 1, error: { code: "internal" } });
    await until("the events", async () => eventsOf(guarded).length > 0 && eventsOf(once).length > 0);
    expect(eventsOf(guarded)).toEqual([expect.objectContaining({ status: "failed", error_code: "revision_guard_tripped" })]);
  });

  it("a parked job waits as awaiting and frees the slot: the next job runs meanwhile", async () => {
    const deadline = new Date(Date.now() + 60_000);
    start([
      { type: "apply", run: async (ctx) => void (await ctx.park({ awaiting: { speakers: ["s-1"] }, deadline, done: 0, total: 1 })) },
      { type: "revision_prune", run: async () => ({ ran: true }) },
    ]);
    const parked = await enqueue("apply", 1);
    await statusIs(parked, "awaiting");
    const next = await enqueue("revision_prune");
    await statusIs(next, "succeeded");
    expect(await rowOf(parked)).toMatchObject({ status: "awaiting", progress_done: 0, progress_total: 1, locked_by: null, finished_at: null });
    expect(eventsOf(parked)).toEqual([]);
    expect(outcomes).toContain("awaiting");
  });

  it("a worker that lost its job (its lease ran out and another claimed it) ends nothing", async () => {
    const queue = queueOf({ leaseMs: 300 });
    const slow = held("revision_prune", async () => ({ late: true }));
    // The first worker's heartbeat is held off by a lease it never renews: it claims, then stalls.
    const claimed = await enqueue("revision_prune", 3, queue);
    const run = await queue.claim("w-stalled", { types: ["revision_prune"], byPriority: [] }, new Date());
    expect(run?.job.id).toBe(claimed);
    await new Promise((r) => setTimeout(r, 400));
    start([slow.handler], queue);
    await until("the second claim", async () => slow.started.includes(claimed));
    // The stalled worker comes back: its end is refused, the row stays the new owner's.
    expect(await run!.succeed({ stale: true }, new Date())).toBe(false);
    expect(await rowOf(claimed)).toMatchObject({ status: "running", attempts: 2 });
    expect((await rowOf(claimed)).locked_by).not.toBe("w-stalled");
    slow.release();
    await statusIs(claimed, "succeeded");
    expect((await rowOf(claimed)).result).toEqual({ late: true });
    await until("the event", async () => eventsOf(claimed).length > 0);
    expect(eventsOf(claimed)).toHaveLength(1);
  });
});
