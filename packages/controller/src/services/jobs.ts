import { AppError, ConflictError, NotFoundError } from "@rlc/shared/errors";
import type { Job, JobType } from "@rlc/shared/schemas";
import type { Bus } from "../bus/index.js";
import type { Db, Sql } from "../db/connect.js";
import { cancelQueuedJob, findJobById, insertJob, type JobRow, listJobs, requestJobCancel } from "../db/jobs.js";
import { JOBS_WAKE_SUBJECT, jobFinishedSubject } from "../jobs/worker.js";
import { toPage } from "../lib/cursor.js";
import { afterIdOf } from "../lib/id-cursor.js";
import { uuidv7 } from "../lib/ids.js";
import { iso, isoRequired } from "../lib/time.js";
import type { AuditWriter } from "./audit.js";
import type { RequestContext } from "./context.js";

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

/**
 * Enqueues a job in the caller's transaction (so a change and its job commit together) and
 * wakes the workers once that transaction has committed.
 */
export async function enqueueJob(
  tx: Db,
  bus: Bus,
  input: { tenantId: string; type: JobType; params: Record<string, unknown>; createdBy: string | null; now: Date; afterCommit: (fn: () => void) => void; maxAttempts?: number },
): Promise<JobRow> {
  const row = await insertJob(tx, {
    id: uuidv7(),
    tenant_id: input.tenantId,
    type: input.type,
    params: input.params,
    created_by: input.createdBy,
    created_at: input.now,
    max_attempts: input.maxAttempts ?? 3,
  });
  input.afterCommit(() => bus.publish(JOBS_WAKE_SUBJECT, { job_id: row.id }));
  return row;
}

/** Waits until the job ends or `timeoutMs` passes; answers the job as it then is. */
export async function waitForJob(sql: Sql, bus: Bus, tenantId: string, jobId: string, timeoutMs: number): Promise<JobRow> {
  const end = Date.now() + timeoutMs;
  let poke: (() => void) | null = null;
  const unsubscribe = bus.subscribe(jobFinishedSubject(tenantId, jobId), () => poke?.());
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

export function createJobService(deps: { audit: AuditWriter }) {
  return {
    async list(db: Db, ctx: RequestContext, q: { cursor?: string | undefined; limit: number; type?: string | undefined; status?: string | undefined }) {
      const afterId = afterIdOf(q.cursor);
      const rows = await listJobs(db, ctx.principal.tenantId, { afterId, limit: q.limit, type: q.type, status: q.status });
      return toPage(rows, q.limit, (r) => [r.id], toJob);
    },
    async get(db: Db, ctx: RequestContext, id: string) {
      const row = await findJobById(db, ctx.principal.tenantId, id);
      if (!row) throw new NotFoundError("job", id);
      return toJob(row);
    },
    /** Queued → cancelled at once; running → cancel_requested (stops at its next step); finished → 409. */
    async cancel(tx: Db, ctx: RequestContext, id: string) {
      const row = await findJobById(tx, ctx.principal.tenantId, id, true);
      if (!row) throw new NotFoundError("job", id);
      if (row.status === "succeeded" || row.status === "failed" || row.status === "cancelled") {
        throw new ConflictError(`the job has already ended (${row.status})`, { job_id: id, status: row.status });
      }
      const after = row.status === "queued" ? await cancelQueuedJob(tx, id, ctx.now) : await requestJobCancel(tx, id, ctx.now);
      await deps.audit.record(tx, ctx, {
        action: "cancel",
        resource_type: "job",
        resource_id: id,
        summary: `${row.type} job ${row.status === "queued" ? "cancelled" : "asked to stop"}`,
        changes: { status: { from: row.status, to: after.status }, cancel_requested: { from: row.cancel_requested, to: true } },
      });
      return toJob(after);
    },
  };
}
