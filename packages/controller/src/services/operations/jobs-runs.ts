import { internalSubjects } from "@rlc/proto";
import { AppError } from "@rlc/shared/errors";
import type { Bus } from "../../bus/index.js";
import type { Sql, Tx } from "../../db/connect.js";
import { claimJob, failPoisonedJobs, finishJob, type JobRow, lockJobState, parkJob, renewJobLease, retryJob, updateJobProgress } from "../../db/jobs.js";
import { publishJobFinished } from "../../events/publish.js";
import { JobCancelledError, JobLostError } from "./job-context.js";
import { POISONED_PROBLEM, problemOf } from "./jobs-problem.js";

/** No job is tried more often than this, whatever its own max_attempts says. */
export const JOB_ATTEMPTS_CAP = 5;
/** Running jobs of one tenant a claim allows per lane (JOBS_TENANT_MAX_RUNNING's default). */
export const DEFAULT_TENANT_MAX_RUNNING = 2;
/** How long a claim holds a job before another worker may take it up; a worker renews it every third. */
export const DEFAULT_LEASE_MS = 30_000;

/** Backoff between attempts: 2 s, 4 s, 8 s … capped at 5 minutes. */
export const retryDelayMs = (attempts: number) => Math.min(300_000, 1000 * 2 ** attempts);

/** The caps the queue hands its workers, fixed when it is built. */
export interface JobRunCaps {
  /** Attempts a job gets at the most (default JOB_ATTEMPTS_CAP). */
  attemptsCap?: number | undefined;
  /** Running jobs of one tenant per lane (default 2). */
  tenantMaxRunning?: number | undefined;
  /** Lease length (default 30 s). */
  leaseMs?: number | undefined;
}

/** How a failed attempt left the job: ended `failed` with its problem, or queued again for a later attempt. */
export type AttemptEnd = { ended: "failed"; problem: Record<string, unknown> } | { ended: "retried"; problem: Record<string, unknown> };

/**
 * One claimed attempt of a job: every change of its state while a worker holds it. Each change
 * applies only while the worker still owns the job (a lease that ran out and was taken by
 * another worker makes it a no-op, false, or JobLostError), and a change that ends the job
 * announces it (`job_finished`) once committed.
 */
export interface JobRun {
  job: JobRow;
  /** Extends the lease; says whether the worker still owns the job and whether a cancel was asked. */
  renew(now: Date): Promise<{ owned: boolean; cancel_requested: boolean }>;
  progress(done: number, total: number | null): Promise<void>;
  /** Parks the job as `awaiting`; false when a cancel or another worker got there first. */
  park(p: { awaiting: unknown; deadline: Date; done: number; total: number }, now: Date): Promise<boolean>;
  /**
   * Runs `fn` and ends the job `succeeded` with its result in one transaction that then checks
   * the job is still this worker's (JobLostError) and not asked to stop (JobCancelledError),
   * rolling back what `fn` wrote otherwise.
   * The end is announced by `completed`, once the handler has published what it made.
   */
  complete<R extends Record<string, unknown>>(fn: (tx: Tx) => Promise<R>, now: () => Date): Promise<R>;
  /** Announces the end `complete` committed (`job_finished`): after the handler's own events, which it follows. */
  completed(now: Date): void;
  /** Ends the job `succeeded`; false when the worker no longer owned it. */
  succeed(result: Record<string, unknown>, now: Date): Promise<boolean>;
  /** Ends the job `cancelled` (a cancel was asked and the job stopped); false when the worker no longer owned it. */
  cancelled(now: Date): Promise<boolean>;
  /**
   * The attempt threw: an AppError (what a user may read), or the last attempt allowed (by the
   * queue's cap and the handler's `maxAttempts`, else the job's), ends the job `failed`; any
   * other error queues it again after a backoff. The problem stored never carries an internal
   * message.
   */
  attemptFailed(err: unknown, maxAttempts: number | undefined, now: Date): Promise<AttemptEnd>;
}

/**
 * The worker's side of the job queue: claiming (fair between tenants, with the caps it is built
 * with), the lease, the end of each attempt, the sweep of jobs whose workers died on every try.
 * Part of the queue service (`createJobService`), which owns every change of a job's state.
 */
export function createJobRuns(deps: { sql: Sql; bus: Bus } & JobRunCaps) {
  const attemptsCap = deps.attemptsCap ?? JOB_ATTEMPTS_CAP;
  const tenantMaxRunning = deps.tenantMaxRunning ?? DEFAULT_TENANT_MAX_RUNNING;
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const { sql, bus } = deps;

  /** The end of a job, announced once it has committed. */
  const announce = (job: JobRow, end: { status: "succeeded" | "failed" | "cancelled"; error: Record<string, unknown> | null }, now: Date) =>
    publishJobFinished(bus, { ...job, ...end, finished_at: null }, now);

  const runOf = (job: JobRow, workerId: string): JobRun => ({
    job,
    renew: (now) => renewJobLease(sql, job.id, workerId, now, leaseMs),
    progress: (done, total) => updateJobProgress(sql, job.id, workerId, done, total),
    park: (p, now) => parkJob(sql, job.id, workerId, { ...p, now }),
    async complete<R extends Record<string, unknown>>(fn: (tx: Tx) => Promise<R>, now: () => Date): Promise<R> {
      const result = (await sql.begin(async (tx): Promise<R> => {
        const done = await fn(tx);
        // The job's row locked last, for the moment it ends: held while `fn` worked (a revision's
        // build), it kept the lease's renewal and a cancel request waiting on it meanwhile.
        const row = await lockJobState(tx, job.id);
        if (!row || row.locked_by !== workerId || row.status !== "running") throw new JobLostError();
        if (row.cancel_requested) throw new JobCancelledError();
        await finishJob(tx, job.id, workerId, { status: "succeeded", result: done, now: now() });
        return done;
      })) as R;
      return result;
    },
    completed: (now) => announce(job, { status: "succeeded", error: null }, now),
    async succeed(result, now) {
      const ended = await finishJob(sql, job.id, workerId, { status: "succeeded", result, now });
      if (ended) announce(job, { status: "succeeded", error: null }, now);
      return ended;
    },
    async cancelled(now) {
      const error = problemOf(new AppError("conflict", "the job was cancelled"));
      const ended = await finishJob(sql, job.id, workerId, { status: "cancelled", error, now });
      if (ended) announce(job, { status: "cancelled", error }, now);
      return ended;
    },
    async attemptFailed(err, maxAttempts, now) {
      const problem = problemOf(err);
      if (err instanceof AppError || job.attempts >= Math.min(attemptsCap, maxAttempts ?? job.max_attempts)) {
        if (await finishJob(sql, job.id, workerId, { status: "failed", error: problem, now })) announce(job, { status: "failed", error: problem }, now);
        return { ended: "failed", problem };
      }
      await retryJob(sql, job.id, workerId, new Date(now.getTime() + retryDelayMs(job.attempts)), problem, now);
      return { ended: "retried", problem };
    },
  });

  return {
    /** The lease a claim takes; a worker renews it every third of it. */
    leaseMs,
    /** Calls `wake` whenever a job is enqueued on any replica; answers the unsubscribe. */
    onEnqueued: (wake: () => void): (() => void) => bus.subscribe(internalSubjects.jobsWake, wake),
    /**
     * Claims the next job of `types` for `workerId` (see claimJob: due, fair between tenants,
     * `byPriority` first), or undefined when none is due.
     */
    async claim(workerId: string, f: { types: string[]; byPriority: string[] }, now: Date): Promise<JobRun | undefined> {
      const job = await claimJob(sql, { workerId, now, leaseMs, types: f.types, tenantMaxRunning, attemptsCap, byPriority: f.byPriority });
      return job ? runOf(job, workerId) : undefined;
    },
    /**
     * Ends `failed` (reason `poisoned`) the jobs whose worker was lost on their last allowed
     * attempt, announcing each; answers them.
     */
    async sweepPoisoned(now: Date): Promise<JobRow[]> {
      const dead = await failPoisonedJobs(sql, now, attemptsCap, POISONED_PROBLEM);
      for (const job of dead) publishJobFinished(bus, job, now);
      return dead;
    },
  };
}

export type JobRuns = ReturnType<typeof createJobRuns>;
