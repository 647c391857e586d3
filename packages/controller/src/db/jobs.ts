import type { Db } from "./connect.js";
import { type KeysetPage, tenantTable, whereEquals } from "./tenant-table.js";

export interface JobRow {
  id: string;
  tenant_id: string;
  type: string;
  status: "queued" | "running" | "awaiting" | "succeeded" | "failed" | "cancelled";
  cancel_requested: boolean;
  progress_done: number | null;
  progress_total: number | null;
  params: Record<string, unknown>;
  result: Record<string, unknown> | null;
  error: Record<string, unknown> | null;
  attempts: number;
  max_attempts: number;
  run_after: Date;
  locked_by: string | null;
  locked_until: Date | null;
  created_by: string | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  updated_at: Date;
  /** What an `awaiting` job waits for; its handler's own shape. */
  awaiting: Record<string, unknown> | null;
  /** When an `awaiting` job is ended by the deadline sweep. */
  deadline_at: Date | null;
}

export async function insertJob(
  db: Db,
  row: Pick<JobRow, "id" | "tenant_id" | "type" | "params" | "created_by" | "created_at" | "max_attempts">,
): Promise<JobRow> {
  const [job] = await db<JobRow[]>`
    INSERT INTO jobs (id, tenant_id, type, status, params, created_by, created_at, updated_at, run_after, max_attempts)
    VALUES (${row.id}, ${row.tenant_id}, ${row.type}, 'queued', ${db.json(row.params as never)}, ${row.created_by},
            ${row.created_at}, ${row.created_at}, ${row.created_at}, ${row.max_attempts})
    RETURNING *`;
  return job!;
}

const jobs = tenantTable<JobRow>("jobs");

export const findJobById = jobs.findById;

export function listJobs(db: Db, tenantId: string, f: KeysetPage & { type?: string | undefined; status?: string | undefined }): Promise<JobRow[]> {
  return jobs.list(db, tenantId, f, db`${whereEquals(db, "type", f.type)} ${whereEquals(db, "status", f.status)}`);
}

/**
 * Claims one job of `types`: queued and due, or running with a lease that ran out (its worker
 * died) and attempts left. Fairness between tenants: a tenant already running `tenantMaxRunning`
 * jobs of these types (so per lane: a tenant's long refreshes never use up its quick jobs'
 * share) is passed over, and among the others the one with the fewest running jobs goes first,
 * then the oldest due job, so one tenant's burst never starves another's. SKIP LOCKED lets
 * workers on several replicas claim side by side; two claims racing may each see the same
 * count, so the per-tenant cap can be passed by one job per racing claim, never more.
 */
export async function claimJob(
  db: Db,
  opts: { workerId: string; now: Date; leaseMs: number; types: string[]; tenantMaxRunning: number; attemptsCap: number; byPriority?: string[] },
): Promise<JobRow | undefined> {
  const [row] = await db<JobRow[]>`
    WITH busy AS (
      SELECT tenant_id, count(*) AS n FROM jobs
      WHERE status = 'running' AND locked_until >= ${opts.now} AND type = ANY(${opts.types})
      GROUP BY tenant_id
    ), candidate AS (
      SELECT j.id FROM jobs j LEFT JOIN busy b ON b.tenant_id = j.tenant_id
      WHERE j.type = ANY(${opts.types})
        AND ((j.status = 'queued' AND j.run_after <= ${opts.now})
          OR (j.status = 'running' AND j.locked_until < ${opts.now} AND j.attempts < LEAST(j.max_attempts, ${opts.attemptsCap})))
        AND coalesce(b.n, 0) < ${opts.tenantMaxRunning}
      ORDER BY coalesce(b.n, 0), coalesce(array_position(${opts.byPriority ?? []}::text[], j.type), 1000), j.run_after, j.id
      LIMIT 1
      FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = ${opts.workerId},
      locked_until = ${opts.now}::timestamptz + make_interval(secs => ${opts.leaseMs / 1000}),
      started_at = COALESCE(jobs.started_at, ${opts.now}), updated_at = ${opts.now}
    FROM candidate WHERE jobs.id = candidate.id
    RETURNING jobs.*`;
  return row;
}

/**
 * Ends as `failed` (reason `poisoned`) every job whose worker lost it — lease run out — after
 * its last allowed attempt: a job that kills its worker each time is not taken again forever.
 */
export async function failPoisonedJobs(db: Db, now: Date, attemptsCap: number, error: Record<string, unknown>): Promise<JobRow[]> {
  // One statement decides and ends the rows together: two sweeps never end one job twice.
  return db<JobRow[]>`
    UPDATE jobs SET status = 'failed', error = ${db.json(error as never)}, finished_at = ${now}, updated_at = ${now},
      locked_by = NULL, locked_until = NULL
    WHERE status = 'running' AND locked_until < ${now} AND attempts >= LEAST(max_attempts, ${attemptsCap})
    RETURNING *`;
}

/**
 * Holds, until the caller's transaction ends, the lock that makes a tenant's count-then-insert
 * under the queue cap one step: parallel requests cannot all see room for one more job.
 */
export async function lockTenantQueue(db: Db, tenantId: string): Promise<void> {
  await db`SELECT pg_advisory_xact_lock(hashtext(${`jobs-queue:${tenantId}`}))`;
}

/** Jobs of a tenant waiting for a worker; the per-tenant queue cap counts these. */
export async function countQueuedJobs(db: Db, tenantId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM jobs WHERE tenant_id = ${tenantId} AND status = 'queued'`;
  return row!.n;
}

/**
 * Parks a job its worker still owns as `awaiting`: the worker slot is free again and the job
 * ends later, by a report (evaluateAwaiting) or at `deadline`.
 */
export async function parkJob(
  db: Db,
  id: string,
  workerId: string,
  p: { awaiting: unknown; deadline: Date; done: number; total: number; now: Date },
): Promise<boolean> {
  const rows = await db`
    UPDATE jobs SET status = 'awaiting', awaiting = ${db.json(p.awaiting as never)}, deadline_at = ${p.deadline},
      progress_done = ${p.done}, progress_total = ${p.total}, locked_by = NULL, locked_until = NULL, updated_at = ${p.now}
    WHERE id = ${id} AND locked_by = ${workerId} AND status = 'running' AND NOT cancel_requested RETURNING id`;
  return rows.length === 1;
}

/**
 * Locks the awaiting jobs of a type (of one tenant, or all)
 * for evaluation in the caller's transaction. FOR UPDATE, not SKIP LOCKED: an evaluation that
 * waits for another replica's sees that one's end (or the reports committed since) and never
 * misses a report; each is one short transaction.
 */
export async function lockAwaitingJobs(db: Db, f: { type: string; tenantId?: string }): Promise<JobRow[]> {
  return db<JobRow[]>`
    SELECT * FROM jobs WHERE status = 'awaiting' AND type = ${f.type}
      ${f.tenantId === undefined ? db`` : db`AND tenant_id = ${f.tenantId}`}
    ORDER BY id FOR UPDATE`;
}

/** Records an awaiting job's progress and what it still waits for. */
export async function updateAwaiting(db: Db, id: string, p: { awaiting: unknown; done: number; total: number; now: Date }): Promise<void> {
  await db`
    UPDATE jobs SET awaiting = ${db.json(p.awaiting as never)}, progress_done = ${p.done}, progress_total = ${p.total}, updated_at = ${p.now}
    WHERE id = ${id} AND status = 'awaiting'`;
}

/** Ends an awaiting job; false when something else (a cancel, another replica) ended it first. */
export async function finishAwaitingJob(
  db: Db,
  id: string,
  end: { status: "succeeded" | "failed"; result: unknown; error?: unknown; awaiting: unknown; done: number; total: number; now: Date },
): Promise<boolean> {
  const rows = await db`
    UPDATE jobs SET status = ${end.status}, result = ${db.json(end.result as never)},
      error = ${end.error === undefined ? null : db.json(end.error as never)}, awaiting = ${db.json(end.awaiting as never)},
      progress_done = ${end.done}, progress_total = ${end.total}, finished_at = ${end.now}, updated_at = ${end.now}
    WHERE id = ${id} AND status = 'awaiting' RETURNING id`;
  return rows.length === 1;
}

/** Renews the lease while the worker still owns the job; answers whether a cancel was asked. */
export async function renewJobLease(db: Db, id: string, workerId: string, now: Date, leaseMs: number): Promise<{ owned: boolean; cancel_requested: boolean }> {
  const [row] = await db<{ cancel_requested: boolean }[]>`
    UPDATE jobs SET locked_until = ${now}::timestamptz + make_interval(secs => ${leaseMs / 1000})
    WHERE id = ${id} AND locked_by = ${workerId} AND status = 'running'
    RETURNING cancel_requested`;
  return row ? { owned: true, cancel_requested: row.cancel_requested } : { owned: false, cancel_requested: false };
}

export async function updateJobProgress(db: Db, id: string, workerId: string, done: number, total: number | null): Promise<void> {
  await db`UPDATE jobs SET progress_done = ${done}, progress_total = ${total} WHERE id = ${id} AND locked_by = ${workerId}`;
}

/** Ends a job the worker still owns; false when it lost the job (lease ran out, another took it). */
export async function finishJob(
  db: Db,
  id: string,
  workerId: string,
  end: { status: "succeeded" | "failed" | "cancelled"; result?: unknown; error?: unknown; now: Date },
): Promise<boolean> {
  const rows = await db`
    UPDATE jobs SET status = ${end.status}, result = ${end.result === undefined ? null : db.json(end.result as never)},
      error = ${end.error === undefined ? null : db.json(end.error as never)}, finished_at = ${end.now}, updated_at = ${end.now},
      locked_by = NULL, locked_until = NULL
    WHERE id = ${id} AND locked_by = ${workerId} AND status = 'running' RETURNING id`;
  return rows.length === 1;
}

/** Puts a failed attempt back in the queue for a later retry. */
export async function retryJob(db: Db, id: string, workerId: string, runAfter: Date, error: unknown, now: Date): Promise<boolean> {
  const rows = await db`
    UPDATE jobs SET status = 'queued', run_after = ${runAfter}, error = ${db.json(error as never)}, locked_by = NULL,
      locked_until = NULL, updated_at = ${now}
    WHERE id = ${id} AND locked_by = ${workerId} AND status = 'running' RETURNING id`;
  return rows.length === 1;
}

/** Cancels a queued or awaiting job at once; an awaiting apply's outcomes so far become its result. */
export async function cancelQueuedJob(db: Db, id: string, now: Date): Promise<JobRow> {
  const [row] = await db<JobRow[]>`
    UPDATE jobs SET status = 'cancelled', cancel_requested = true, finished_at = ${now}, updated_at = ${now},
      result = CASE WHEN status = 'awaiting' THEN awaiting ELSE result END
    WHERE id = ${id} RETURNING *`;
  return row!;
}

export async function requestJobCancel(db: Db, id: string, now: Date): Promise<JobRow> {
  const [row] = await db<JobRow[]>`UPDATE jobs SET cancel_requested = true, updated_at = ${now} WHERE id = ${id} RETURNING *`;
  return row!;
}

export async function deleteFinishedJobsBefore(db: Db, tenantId: string, before: Date): Promise<number> {
  const rows = await db`
    DELETE FROM jobs WHERE tenant_id = ${tenantId} AND status IN ('succeeded', 'failed', 'cancelled') AND finished_at < ${before}
    RETURNING id`;
  return rows.length;
}

/** A job's owner and state, locked until `tx` ends (a handler's final commit checks them). */
export async function lockJobState(tx: Db, jobId: string): Promise<{ locked_by: string | null; status: string; cancel_requested: boolean } | undefined> {
  const [row] = await tx<{ locked_by: string | null; status: string; cancel_requested: boolean }[]>`
    SELECT locked_by, status, cancel_requested FROM jobs WHERE id = ${jobId} FOR UPDATE`;
  return row;
}
