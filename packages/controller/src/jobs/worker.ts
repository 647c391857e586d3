import { internalSubjects } from "@rlc/proto";
import { AppError } from "@rlc/shared/errors";
import type { Clock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import type { Bus } from "../bus/index.js";
import type { Db, Sql } from "../db/connect.js";
import { claimJob, failPoisonedJobs, finishJob, type JobRow, lockJobState, parkJob, renewJobLease, retryJob, updateJobProgress } from "../db/jobs.js";
import { publishJobFinished } from "../events/publish.js";
import { uuidv7 } from "../lib/ids.js";
import type { JobMetrics } from "../metrics/controller-metrics.js";
import { JobCancelledError, type JobContext, type JobHandler, JobLostError } from "./handler.js";
import { POISONED_PROBLEM, problemOf } from "./problem.js";

export { problemOf } from "./problem.js";

/** No job is tried more often than this, whatever its own max_attempts says. */
export const JOB_ATTEMPTS_CAP = 5;

/** The problem a job that used up its attempts by losing its worker ends with. */

export interface WorkerOptions {
  sql: Sql;
  bus: Bus;
  clock: Clock;
  logger: FastifyBaseLogger;
  handlers: JobHandler[];
  /** Slots that run any job type (long ones included). Default 2. */
  concurrency?: number;
  /** Extra slots that run only quick job types (lane "quick"), so those never wait behind long ones. Default 1. */
  quickSlots?: number;
  /** Running jobs of one tenant the claim allows per lane (see claimJob). Default 2. */
  tenantMaxRunning?: number;
  /** Lease length; renewed every third of it. Default 30 s. */
  leaseMs?: number;
  /** Poll interval when nothing wakes the worker. Default 1 s. */
  pollMs?: number;
  /** Told how each run ended and which jobs failed (the controller's /metrics). */
  metrics?: JobMetrics;
}

/** Backoff between attempts: 2 s, 4 s, 8 s … capped at 5 minutes. */
const retryDelayMs = (attempts: number) => Math.min(300_000, 1000 * 2 ** attempts);

/**
 * Runs jobs of the given types: claims with SKIP LOCKED, renews the lease while working,
 * finishes or retries. Any number of workers on any number of replicas can run side by side.
 */
export function startWorker(opts: WorkerOptions) {
  const workerId = `w-${uuidv7()}`;
  const leaseMs = opts.leaseMs ?? 30_000;
  const handlers = new Map(opts.handlers.map((h) => [h.type, h]));
  const allTypes = [...handlers.keys()];
  const quickTypes = opts.handlers.filter((h) => (h.lane ?? "quick") === "quick").map((h) => h.type);
  const tenantMaxRunning = opts.tenantMaxRunning ?? 2;
  const byPriority = [...opts.handlers].sort((a, b) => (a.priority ?? 10) - (b.priority ?? 10)).map((h) => h.type);
  let stopped = false;
  const sleepers = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of [...sleepers]) wake();
  };
  const unsubscribe = opts.bus.subscribe(internalSubjects.jobsWake, wakeAll);

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        sleepers.delete(done);
        resolve();
      }
      sleepers.add(done);
    });

  async function runJob(job: JobRow) {
    const handler = handlers.get(job.type as JobHandler["type"])!;
    const abort = new AbortController();
    let completed = false;
    let parked = false;
    let cancelAsked = job.cancel_requested;
    const runStarted = performance.now();
    let outcome = "succeeded";
    /** How this attempt ended the job, if it did (a retry or a lost lease did not). */
    let ended: { status: "succeeded" | "failed" | "cancelled"; error: Record<string, unknown> | null } | null = null;
    const heartbeat = setInterval(
      async () => {
        try {
          const lease = await renewJobLease(opts.sql, job.id, workerId, new Date(opts.clock.now()), leaseMs);
          if (!lease.owned) abort.abort(new JobLostError());
          else if (lease.cancel_requested) {
            cancelAsked = true;
            abort.abort(new JobCancelledError());
          }
        } catch (err) {
          opts.logger.warn({ err, job_id: job.id }, "lease renewal failed");
        }
      },
      Math.max(200, Math.min(1000, Math.floor(leaseMs / 3))),
    ); // renews the lease and notices a cancel within a second

    const ctx: JobContext = {
      job,
      signal: abort.signal,
      now: () => new Date(opts.clock.now()),
      progress: (done, total) => updateJobProgress(opts.sql, job.id, workerId, done, total),
      async checkpoint() {
        if (cancelAsked) throw new JobCancelledError();
        const lease = await renewJobLease(opts.sql, job.id, workerId, new Date(opts.clock.now()), leaseMs);
        if (!lease.owned) throw new JobLostError();
        if (lease.cancel_requested) {
          cancelAsked = true;
          throw new JobCancelledError();
        }
      },
      async park(p) {
        if (!(await parkJob(opts.sql, job.id, workerId, { ...p, now: new Date(opts.clock.now()) }))) {
          const lease = await renewJobLease(opts.sql, job.id, workerId, new Date(opts.clock.now()), leaseMs);
          throw lease.owned ? new JobCancelledError() : new JobLostError();
        }
        parked = true;
      },
      async complete<R extends Record<string, unknown>>(fn: (tx: Db) => Promise<R>): Promise<R> {
        const done = (await opts.sql.begin(async (tx): Promise<R> => {
          const row = await lockJobState(tx, job.id);
          if (!row || row.locked_by !== workerId || row.status !== "running") throw new JobLostError();
          if (row.cancel_requested) throw new JobCancelledError();
          const result = await fn(tx);
          await finishJob(tx, job.id, workerId, { status: "succeeded", result, now: new Date(opts.clock.now()) });
          completed = true;
          return result;
        })) as R;
        ended = { status: "succeeded", error: null };
        return done;
      },
    };

    try {
      if (job.cancel_requested) throw new JobCancelledError();
      const result = await handler.run(ctx);
      if (
        !completed &&
        !parked &&
        (await finishJob(opts.sql, job.id, workerId, { status: "succeeded", result: result ?? {}, now: new Date(opts.clock.now()) }))
      ) {
        ended = { status: "succeeded", error: null };
      }
    } catch (raw) {
      const err = abort.signal.aborted && !(raw instanceof AppError) ? (abort.signal.reason ?? raw) : raw;
      if (err instanceof JobLostError) {
        opts.logger.warn({ job_id: job.id }, "job lost to another worker");
        outcome = "lost";
      } else if (err instanceof JobCancelledError) {
        outcome = "cancelled";
        const error = problemOf(new AppError("conflict", "the job was cancelled"));
        if (await finishJob(opts.sql, job.id, workerId, { status: "cancelled", error, now: new Date(opts.clock.now()) }))
          ended = { status: "cancelled", error };
      } else if (err instanceof AppError || job.attempts >= Math.min(JOB_ATTEMPTS_CAP, handler.maxAttempts ?? job.max_attempts)) {
        if (!(err instanceof AppError)) opts.logger.error({ err, job_id: job.id, attempts: job.attempts }, "job failed");
        const problem = problemOf(err);
        if (await finishJob(opts.sql, job.id, workerId, { status: "failed", error: problem, now: new Date(opts.clock.now()) }))
          ended = { status: "failed", error: problem };
        outcome = "failed";
        opts.metrics?.failed(job.type, String(problem.code));
      } else {
        opts.logger.warn({ err, job_id: job.id, attempts: job.attempts }, "job attempt failed; will retry");
        outcome = "retried";
        await retryJob(opts.sql, job.id, workerId, new Date(opts.clock.now() + retryDelayMs(job.attempts)), problemOf(err), new Date(opts.clock.now()));
      }
    } finally {
      clearInterval(heartbeat);
      opts.metrics?.ran(job.type, parked ? "awaiting" : outcome, (performance.now() - runStarted) / 1000);
      // Once the end has committed (finishJob ran outside the handler's transaction, or `complete` returned).
      if (ended) publishJobFinished(opts.bus, { ...job, ...ended, finished_at: null }, new Date(opts.clock.now()));
    }
  }

  // The poisoned-job sweep is one UPDATE, run by one slot at a time and at most once a lease
  // third: a lost job's lease has to run out before it can be swept anyway.
  let lastSweep = 0;
  async function sweepPoisoned() {
    const now = new Date(opts.clock.now());
    if (now.getTime() - lastSweep < leaseMs / 3) return;
    lastSweep = now.getTime();
    for (const dead of await failPoisonedJobs(opts.sql, now, JOB_ATTEMPTS_CAP, POISONED_PROBLEM)) {
      opts.logger.error({ job_id: dead.id, type: dead.type, attempts: dead.attempts }, "job poisoned: its worker was lost on every attempt");
      opts.metrics?.failed(dead.type, String(POISONED_PROBLEM.code));
      publishJobFinished(opts.bus, dead, now);
    }
  }

  async function slot(types: string[]) {
    while (!stopped) {
      let job: JobRow | undefined;
      try {
        await sweepPoisoned();
        job = await claimJob(opts.sql, {
          workerId,
          now: new Date(opts.clock.now()),
          leaseMs,
          types,
          tenantMaxRunning,
          attemptsCap: JOB_ATTEMPTS_CAP,
          byPriority,
        });
      } catch (err) {
        if (!stopped) opts.logger.error({ err }, "job claim failed");
      }
      if (job) await runJob(job).catch((err) => opts.logger.error({ err, job_id: job.id }, "job runner failed"));
      else if (!stopped) await sleep(opts.pollMs ?? 1000);
    }
  }

  // Lanes: the general slots take any type; the quick slots only quick types (apply, peer
  // reconcile, maintenance, prune), so a run of long refreshes never holds those back.
  const slots = [
    ...Array.from({ length: opts.concurrency ?? 2 }, () => slot(allTypes)),
    ...(quickTypes.length ? Array.from({ length: opts.quickSlots ?? 1 }, () => slot(quickTypes)) : []),
  ];
  return {
    workerId,
    async stop() {
      stopped = true;
      wakeAll();
      unsubscribe();
      await Promise.allSettled(slots);
    },
  };
}

export type Worker = ReturnType<typeof startWorker>;
