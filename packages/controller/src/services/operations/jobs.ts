import { eventSubjects, internalSubjects } from "@rlc/proto";
import { AppError, ConflictError, NotFoundError } from "@rlc/shared/errors";
import type { Job, JobType } from "@rlc/shared/schemas";
import type { Bus } from "../../bus/index.js";
import type { Db, Sql } from "../../db/connect.js";
import {
  cancelQueuedJob,
  countQueuedJobs,
  findJobById,
  finishAwaitingJob,
  insertJob,
  type JobRow,
  listJobs,
  lockAwaitingJobs,
  lockTenantQueue,
  requestJobCancel,
  updateAwaiting,
} from "../../db/jobs.js";
import { publishJobFinished } from "../../events/publish.js";
import { toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { iso, isoRequired } from "../../lib/time.js";
import type { AuditWriter } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import { createJobRuns, type JobRunCaps } from "./jobs-runs.js";

export function toJob(row: JobRow): Job {
  return {
    job_id: row.id,
    type: row.type as JobType,
    status: row.status,
    cancel_requested: row.cancel_requested,
    progress: row.progress_done === null ? null : { done: row.progress_done, total: row.progress_total },
    params: row.params,
    result: row.result,
    error: row.error as Job["error"],
    attempts: row.attempts,
    created_at: isoRequired(row.created_at),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    created_by: row.created_by,
  };
}

/** Jobs one tenant may have queued (waiting for a worker) before API calls that add more get a 429 (JOBS_TENANT_MAX_QUEUED's default). */
export const DEFAULT_TENANT_MAX_QUEUED = 100;

/** Seconds a caller refused with `too_many_jobs` is told to wait: about what a few jobs take. */
const QUEUE_FULL_RETRY_AFTER_S = 10;

/** Work asked through the API (`key:…`) is bounded; the scheduler's and jobs' own follow-ups are not (their pace is their schedule). */
const isBounded = (createdBy: string | null) => createdBy?.startsWith("key:") ?? false;

/** A job to enqueue: whose, what, who asked, and where its transaction's after-commit hooks go. */
export interface EnqueueInput {
  tenantId: string;
  type: JobType;
  params: Record<string, unknown>;
  /** `key:<prefix>` for work asked through the API (bounded by the tenant's queue cap), else the scheduler's or a job's name. */
  createdBy: string | null;
  now: Date;
  afterCommit: (fn: () => void) => void;
  maxAttempts?: number;
}

/**
 * Enqueues a job in the caller's transaction (so a change and its job commit together) and
 * wakes the workers once that transaction has committed. Work asked through the API is refused
 * (429 `too_many_jobs`) while the tenant has `tenantMaxQueued` jobs waiting. Services enqueue
 * through the queue service (`JobQueue.enqueue`), which holds the configured cap; this is what
 * it runs.
 */
export async function enqueueJob(tx: Db, bus: Bus, input: EnqueueInput, tenantMaxQueued = DEFAULT_TENANT_MAX_QUEUED): Promise<JobRow> {
  if (isBounded(input.createdBy)) {
    // One round trip: the count runs after the lock on the transaction's connection, in the order sent.
    const [, queued] = await Promise.all([lockTenantQueue(tx, input.tenantId), countQueuedJobs(tx, input.tenantId)]);
    if (queued >= tenantMaxQueued) {
      throw new AppError(
        "too_many_jobs",
        `this tenant already has ${queued} jobs waiting for a worker (at most ${tenantMaxQueued}); retry once some have run`,
        {
          headers: { "retry-after": String(QUEUE_FULL_RETRY_AFTER_S) },
          extra: { queued_jobs: queued, max_queued_jobs: tenantMaxQueued },
        },
      );
    }
  }
  const row = await insertJob(tx, {
    id: uuidv7(),
    tenant_id: input.tenantId,
    type: input.type,
    params: input.params,
    created_by: input.createdBy,
    created_at: input.now,
    max_attempts: input.maxAttempts ?? 3,
  });
  input.afterCommit(() => bus.publish(internalSubjects.jobsWake, { job_id: row.id }));
  return row;
}

/** Waits until the job ends or `timeoutMs` passes; answers the job as it then is. */
export async function waitForJob(sql: Sql, bus: Bus, tenantId: string, jobId: string, timeoutMs: number): Promise<JobRow> {
  const end = Date.now() + timeoutMs;
  let poke: (() => void) | null = null;
  const unsubscribe = bus.subscribe(eventSubjects.jobFinished(tenantId, jobId), () => poke?.());
  try {
    for (;;) {
      const row = await findJobById(sql, tenantId, jobId);
      if (!row) throw new NotFoundError("job", jobId);
      const finished = row.status === "succeeded" || row.status === "failed" || row.status === "cancelled";
      const left = end - Date.now();
      if (finished || left <= 0) return row;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(250, left));
        poke = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    unsubscribe();
  }
}

/** The answer of a `?wait=true` request whose job ended badly: its problem, with `job_id`. */
export function jobFailure(row: JobRow): AppError {
  const error = (row.error ?? {}) as { code?: string; detail?: string };
  if (row.status === "cancelled") return new AppError("conflict", "the job was cancelled", { extra: { job_id: row.id } });
  const code = (error.code ?? "internal") as ConstructorParameters<typeof AppError>[0];
  return new AppError(code, error.detail ?? "the job failed", { extra: { job_id: row.id } });
}

/**
 * The job queue, the one owner of a job's state: enqueueing (with the per-tenant cap it is
 * built with), waiting for, listing, reading and cancelling jobs; the awaiting jobs' changes the
 * deploy service decides; and the workers' side (`jobs-runs.ts`: claim, lease, the end of each
 * attempt, with the caps it is built with). Services that start work take it at construction,
 * the worker (`jobs/worker.ts`) runs on it.
 */
export function createJobService(deps: { audit: AuditWriter; bus: Bus; sql: Sql; tenantMaxQueued?: number | undefined } & JobRunCaps) {
  const bus = deps.bus;
  const tenantMaxQueued = deps.tenantMaxQueued ?? DEFAULT_TENANT_MAX_QUEUED;
  return {
    ...createJobRuns(deps),
    /** Enqueues a job in the caller's transaction; see enqueueJob. */
    enqueue: (tx: Db, input: EnqueueInput): Promise<JobRow> => enqueueJob(tx, bus, input, tenantMaxQueued),

    // An awaiting job's state (an apply parked until its agents report) changes here too: the
    // deploy service decides, per its rules, and asks the queue to write it.

    /** Locks the awaiting jobs of a type (one tenant's, or all) for an evaluation in `tx`. */
    lockAwaiting: (tx: Db, f: { type: JobType; tenantId?: string }): Promise<JobRow[]> => lockAwaitingJobs(tx, f),
    /** Records an awaiting job's progress and what it still waits for. */
    recordAwaiting: (tx: Db, id: string, p: Parameters<typeof updateAwaiting>[2]): Promise<void> => updateAwaiting(tx, id, p),
    /** Ends an awaiting job in `tx`; false when a cancel or another replica ended it first. */
    finishAwaiting: (tx: Db, id: string, end: Parameters<typeof finishAwaitingJob>[2]): Promise<boolean> => finishAwaitingJob(tx, id, end),
    /** Once the end has committed: the job_finished event that `waitFor` and clients wait on. */
    announceEnded: (job: Parameters<typeof publishJobFinished>[1], now: Date): void => publishJobFinished(bus, job, now),

    /**
     * A `?wait=true` request's wait: the job once it has succeeded, or as it is when `timeoutMs`
     * passes with the job still queued or running; a job that failed or was cancelled throws its
     * problem (with `job_id`), as the request would have.
     */
    async waitFor(tenantId: string, jobId: string, timeoutMs: number): Promise<Job> {
      const row = await waitForJob(deps.sql, bus, tenantId, jobId, timeoutMs);
      if (row.status === "failed" || row.status === "cancelled") throw jobFailure(row);
      return toJob(row);
    },
    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number; type?: string | undefined; status?: string | undefined }) {
      const afterId = afterIdOf(q.cursor);
      const rows = await listJobs(deps.sql, ctx.principal.tenantId, { afterId, limit: q.limit, type: q.type, status: q.status });
      return toPage(rows, q.limit, (r) => [r.id], toJob);
    },
    async get(ctx: RequestContext, id: string) {
      const row = await findJobById(deps.sql, ctx.principal.tenantId, id);
      if (!row) throw new NotFoundError("job", id);
      return toJob(row);
    },
    /**
     * Queued or awaiting → cancelled at once (an awaiting apply keeps the outcomes known so far
     * in `result`); running → cancel_requested (stops at its next step); finished → 409, the
     * job's status in `job_status` (a problem's `status` is the HTTP status).
     */
    async cancel(tx: Db, ctx: RequestContext, id: string) {
      const row = await findJobById(tx, ctx.principal.tenantId, id, true);
      if (!row) throw new NotFoundError("job", id);
      if (row.status === "succeeded" || row.status === "failed" || row.status === "cancelled") {
        throw new ConflictError(`the job has already ended (${row.status})`, { job_id: id, job_status: row.status });
      }
      const atOnce = row.status === "queued" || row.status === "awaiting";
      const after = atOnce ? await cancelQueuedJob(tx, id, ctx.now) : await requestJobCancel(tx, id, ctx.now);
      if (atOnce) ctx.afterCommit(() => publishJobFinished(bus, after, ctx.now));
      await deps.audit.record(tx, ctx, {
        action: "cancel",
        resource_type: "job",
        resource_id: id,
        summary: `${row.type} job ${atOnce ? "cancelled" : "asked to stop"}`,
        changes: { status: { from: row.status, to: after.status }, cancel_requested: { from: row.cancel_requested, to: true } },
      });
      return toJob(after);
    },
  };
}

/** The job queue service, as the services that enqueue work take it. */
export type JobQueue = ReturnType<typeof createJobService>;
