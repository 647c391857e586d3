import { AppError, errorTitles, problemTypeBase } from "@rlc/shared/errors";
import type { FastifyBaseLogger } from "fastify";
import type { Bus } from "../bus/index.js";
import type { Db, Sql } from "../db/connect.js";
import { claimJob, finishJob, type JobRow, renewJobLease, retryJob, updateJobProgress } from "../db/jobs.js";
import { uuidv7 } from "../lib/ids.js";
import type { Clock } from "../lib/time.js";
import { JobCancelledError, type JobContext, type JobHandler, JobLostError } from "./handler.js";

export const JOBS_WAKE_SUBJECT = "rl.jobs.wake";
export const jobFinishedSubject = (tenantId: string, jobId: string) => `rl.${tenantId}.jobs.${jobId}.finished`;

export interface WorkerOptions {
  sql: Sql;
  bus: Bus;
  clock: Clock;
  logger: FastifyBaseLogger;
  handlers: JobHandler[];
  /** Jobs run at once by this process. Default 2. */
  concurrency?: number;
  /** Lease length; renewed every third of it. Default 30 s. */
  leaseMs?: number;
  /** Poll interval when nothing wakes the worker. Default 1 s. */
  pollMs?: number;
}

export function problemOf(err: unknown): Record<string, unknown> {
  if (err instanceof AppError) {
    return { type: `${problemTypeBase}${err.code}`, title: errorTitles[err.code], status: err.status, detail: err.message, code: err.code, ...(err.extra ?? {}), ...(err.errors ? { errors: err.errors } : {}) };
  }
  const detail = err instanceof Error ? err.message : String(err);
  return { type: `${problemTypeBase}internal`, title: errorTitles.internal, status: 500, detail, code: "internal" };
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
  const types = [...handlers.keys()];
  let stopped = false;
  const sleepers = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of [...sleepers]) wake();
  };
  const unsubscribe = opts.bus.subscribe(JOBS_WAKE_SUBJECT, wakeAll);

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
    let cancelAsked = job.cancel_requested;
    const heartbeat = setInterval(async () => {
      try {
        const lease = await renewJobLease(opts.sql, job.id, workerId, opts.clock(), leaseMs);
        if (!lease.owned) abort.abort(new JobLostError());
        else if (lease.cancel_requested) {
          cancelAsked = true;
          abort.abort(new JobCancelledError());
        }
      } catch (err) {
        opts.logger.warn({ err, job_id: job.id }, "lease renewal failed");
      }
    }, Math.max(200, Math.min(1000, Math.floor(leaseMs / 3)))); // renews the lease and notices a cancel within a second

    const ctx: JobContext = {
      job,
      signal: abort.signal,
      now: opts.clock,
      progress: (done, total) => updateJobProgress(opts.sql, job.id, workerId, done, total),
      async checkpoint() {
        if (cancelAsked) throw new JobCancelledError();
        const lease = await renewJobLease(opts.sql, job.id, workerId, opts.clock(), leaseMs);
        if (!lease.owned) throw new JobLostError();
        if (lease.cancel_requested) {
          cancelAsked = true;
          throw new JobCancelledError();
        }
      },
      async complete<R extends Record<string, unknown>>(fn: (tx: Db) => Promise<R>): Promise<R> {
        return opts.sql.begin(async (tx): Promise<R> => {
          const [row] = await tx<{ locked_by: string | null; status: string; cancel_requested: boolean }[]>`
            SELECT locked_by, status, cancel_requested FROM jobs WHERE id = ${job.id} FOR UPDATE`;
          if (!row || row.locked_by !== workerId || row.status !== "running") throw new JobLostError();
          if (row.cancel_requested) throw new JobCancelledError();
          const result = await fn(tx);
          await finishJob(tx, job.id, workerId, { status: "succeeded", result, now: opts.clock() });
          completed = true;
          return result;
        }) as Promise<R>;
      },
    };

    try {
      if (job.cancel_requested) throw new JobCancelledError();
      const result = await handler.run(ctx);
      if (!completed) await finishJob(opts.sql, job.id, workerId, { status: "succeeded", result: result ?? {}, now: opts.clock() });
    } catch (raw) {
      const err = abort.signal.aborted && !(raw instanceof AppError) ? (abort.signal.reason ?? raw) : raw;
      if (err instanceof JobLostError) {
        opts.logger.warn({ job_id: job.id }, "job lost to another worker");
      } else if (err instanceof JobCancelledError) {
        await finishJob(opts.sql, job.id, workerId, { status: "cancelled", error: problemOf(new AppError("conflict", "the job was cancelled")), now: opts.clock() });
      } else if (err instanceof AppError || job.attempts >= (handler.maxAttempts ?? job.max_attempts)) {
        await finishJob(opts.sql, job.id, workerId, { status: "failed", error: problemOf(err), now: opts.clock() });
      } else {
        opts.logger.warn({ err, job_id: job.id, attempts: job.attempts }, "job attempt failed; will retry");
        await retryJob(opts.sql, job.id, workerId, new Date(opts.clock().getTime() + retryDelayMs(job.attempts)), problemOf(err), opts.clock());
      }
    } finally {
      clearInterval(heartbeat);
      opts.bus.publish(jobFinishedSubject(job.tenant_id, job.id), { job_id: job.id });
    }
  }

  async function slot() {
    while (!stopped) {
      let job: JobRow | undefined;
      try {
        job = await claimJob(opts.sql, { workerId, now: opts.clock(), leaseMs, types });
      } catch (err) {
        if (!stopped) opts.logger.error({ err }, "job claim failed");
      }
      if (job) await runJob(job).catch((err) => opts.logger.error({ err, job_id: job.id }, "job runner failed"));
      else if (!stopped) await sleep(opts.pollMs ?? 1000);
    }
  }

  const slots = Array.from({ length: opts.concurrency ?? 2 }, () => slot());
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
