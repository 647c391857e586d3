import { AppError } from "@rlc/shared/errors";
import type { Clock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import { uuidv7 } from "../lib/ids.js";
import type { JobMetrics } from "../metrics/controller-metrics.js";
import { POISONED_PROBLEM } from "../services/operations/jobs-problem.js";
import type { JobRun, JobRuns } from "../services/operations/jobs-runs.js";
import { JobCancelledError, type JobContext, type JobHandler, JobLostError } from "./handler.js";

export interface WorkerOptions {
  /** The job queue (`services.jobs`): every change of a job's state is its; its caps bound the claims. */
  queue: JobRuns;
  clock: Clock;
  logger: FastifyBaseLogger;
  handlers: JobHandler[];
  /** Slots that run any job type (long ones included). Default 2. */
  concurrency?: number;
  /** Extra slots that run only quick job types (lane "quick"), so those never wait behind long ones. Default 1. */
  quickSlots?: number;
  /** Poll interval when nothing wakes the worker. Default 1 s. */
  pollMs?: number;
  /** Told how each run ended and which jobs failed (the controller's /metrics). */
  metrics?: JobMetrics;
}

/**
 * Runs jobs of the given types: claims with SKIP LOCKED, renews the lease while working,
 * finishes or retries. Any number of workers on any number of replicas can run side by side.
 */
export function startWorker(opts: WorkerOptions) {
  const workerId = `w-${uuidv7()}`;
  const { queue } = opts;
  const now = () => new Date(opts.clock.now());
  const handlers = new Map(opts.handlers.map((h) => [h.type, h]));
  const allTypes = [...handlers.keys()];
  const quickTypes = opts.handlers.filter((h) => (h.lane ?? "quick") === "quick").map((h) => h.type);
  const byPriority = [...opts.handlers].sort((a, b) => (a.priority ?? 10) - (b.priority ?? 10)).map((h) => h.type);
  let stopped = false;
  const sleepers = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of [...sleepers]) wake();
  };
  const unsubscribe = queue.onEnqueued(wakeAll);

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

  /** Runs one claimed attempt: the handler does the work, the queue records how it ended. */
  async function runJob(run: JobRun) {
    const { job } = run;
    const handler = handlers.get(job.type as JobHandler["type"])!;
    const abort = new AbortController();
    let completed = false;
    let parked = false;
    let cancelAsked = job.cancel_requested;
    const runStarted = performance.now();
    let outcome = "succeeded";
    /** Renews the lease; throws (or aborts the run, from the heartbeat) when the job is lost or a cancel was asked. */
    const renew = async (fail: (err: Error) => void) => {
      const lease = await run.renew(now());
      if (!lease.owned) fail(new JobLostError());
      else if (lease.cancel_requested) {
        cancelAsked = true;
        fail(new JobCancelledError());
      }
    };
    const heartbeat = setInterval(
      () =>
        renew((err) => abort.abort(err)).catch((err) => {
          opts.logger.warn({ err, job_id: job.id }, "lease renewal failed");
        }),
      Math.max(200, Math.min(1000, Math.floor(queue.leaseMs / 3))),
    ); // renews the lease and notices a cancel within a second

    const ctx: JobContext = {
      job,
      signal: abort.signal,
      now,
      progress: (done, total) => run.progress(done, total),
      async checkpoint() {
        if (cancelAsked) throw new JobCancelledError();
        await renew((err) => {
          throw err;
        });
      },
      async park(p) {
        if (!(await run.park(p, now()))) {
          const lease = await run.renew(now());
          throw lease.owned ? new JobCancelledError() : new JobLostError();
        }
        parked = true;
      },
      complete: async (fn) => {
        const result = await run.complete(fn, now);
        completed = true;
        return result;
      },
    };

    try {
      if (job.cancel_requested) throw new JobCancelledError();
      const result = await handler.run(ctx);
      // A job that ended through `complete` is announced after the events its handler published
      // (a refresh's revision_created before its job_finished).
      if (completed) run.completed(now());
      else if (!parked) await run.succeed(result ?? {}, now());
    } catch (raw) {
      if (completed) run.completed(now()); // the end committed; what threw came after it
      const err = abort.signal.aborted && !(raw instanceof AppError) ? (abort.signal.reason ?? raw) : raw;
      if (err instanceof JobLostError) {
        opts.logger.warn({ job_id: job.id }, "job lost to another worker");
        outcome = "lost";
      } else if (err instanceof JobCancelledError) {
        outcome = "cancelled";
        await run.cancelled(now());
      } else {
        const end = await run.attemptFailed(err, handler.maxAttempts, now());
        outcome = end.ended;
        if (end.ended === "failed") {
          if (!(err instanceof AppError)) opts.logger.error({ err, job_id: job.id, attempts: job.attempts }, "job failed");
          opts.metrics?.failed(job.type, String(end.problem.code));
        } else opts.logger.warn({ err, job_id: job.id, attempts: job.attempts }, "job attempt failed; will retry");
      }
    } finally {
      clearInterval(heartbeat);
      opts.metrics?.ran(job.type, parked ? "awaiting" : outcome, (performance.now() - runStarted) / 1000);
    }
  }

  // The poisoned-job sweep is one UPDATE, run by one slot at a time and at most once a lease
  // third: a lost job's lease has to run out before it can be swept anyway.
  let lastSweep = 0;
  async function sweepPoisoned() {
    const at = now();
    if (at.getTime() - lastSweep < queue.leaseMs / 3) return;
    lastSweep = at.getTime();
    for (const dead of await queue.sweepPoisoned(at)) {
      opts.logger.error({ job_id: dead.id, type: dead.type, attempts: dead.attempts }, "job poisoned: its worker was lost on every attempt");
      opts.metrics?.failed(dead.type, String(POISONED_PROBLEM.code));
    }
  }

  async function slot(types: string[]) {
    while (!stopped) {
      let run: JobRun | undefined;
      try {
        await sweepPoisoned();
        run = await queue.claim(workerId, { types, byPriority }, now());
      } catch (err) {
        if (!stopped) opts.logger.error({ err }, "job claim failed");
      }
      if (run) {
        const job = run.job;
        await runJob(run).catch((err) => opts.logger.error({ err, job_id: job.id }, "job runner failed"));
      } else if (!stopped) await sleep(opts.pollMs ?? 1000);
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
