import type { Db } from "./connect.js";

export interface JobRow {
  id: string;
  tenant_id: string;
  type: string;
  status: "queued" | "running" | "succeeded" | "failed" | "cancelled";
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

export async function findJobById(db: Db, tenantId: string, id: string, forUpdate = false): Promise<JobRow | undefined> {
  const [row] = forUpdate
    ? await db<JobRow[]>`SELECT * FROM jobs WHERE tenant_id = ${tenantId} AND id = ${id} FOR UPDATE`
    : await db<JobRow[]>`SELECT * FROM jobs WHERE tenant_id = ${tenantId} AND id = ${id}`;
  return row;
}

export async function listJobs(
  db: Db,
  tenantId: string,
  f: { afterId: string | null; limit: number; type?: string | undefined; status?: string | undefined },
): Promise<JobRow[]> {
  return db<JobRow[]>`
    SELECT * FROM jobs WHERE tenant_id = ${tenantId}
      ${f.afterId === null ? db`` : db`AND id < ${f.afterId}`}
      ${f.type === undefined ? db`` : db`AND type = ${f.type}`}
      ${f.status === undefined ? db`` : db`AND status = ${f.status}`}
    ORDER BY id DESC LIMIT ${f.limit + 1}`;
}

/**
 * Claims one job: queued and due, or running with a lease that ran out (its worker died).
 * Fairness between tenants: the tenant with the fewest running jobs goes first, then the
 * oldest due job, so one tenant's burst never starves another's. SKIP LOCKED lets workers on
 * several replicas claim side by side without waiting on each other.
 */
export async function claimJob(db: Db, opts: { workerId: string; now: Date; leaseMs: number; types: string[] }): Promise<JobRow | undefined> {
  const [row] = await db<JobRow[]>`
    WITH candidate AS (
      SELECT j.id FROM jobs j
      WHERE j.type = ANY(${opts.types})
        AND ((j.status = 'queued' AND j.run_after <= ${opts.now})
          OR (j.status = 'running' AND j.locked_until < ${opts.now}))
      ORDER BY (SELECT count(*) FROM jobs r
                WHERE r.tenant_id = j.tenant_id AND r.status = 'running' AND r.locked_until >= ${opts.now}),
               j.run_after, j.id
      LIMIT 1
      FOR UPDATE SKIP LOCKED
    )
    UPDATE jobs SET status = 'running', attempts = jobs.attempts + 1, locked_by = ${opts.workerId},
      locked_until = ${opts.now}::timestamptz + make_interval(secs => ${opts.leaseMs / 1000}),
      started_at = COALESCE(jobs.started_at, ${opts.now}), updated_at = ${opts.now}
    FROM candidate WHERE jobs.id = candidate.id
    RETURNING jobs.*`;
  return row;
}

/** Renews the lease while the worker still owns the job; answers whether a cancel was asked. */
export async function renewJobLease(
  db: Db,
  id: string,
  workerId: string,
  now: Date,
  leaseMs: number,
): Promise<{ owned: boolean; cancel_requested: boolean }> {
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

export async function cancelQueuedJob(db: Db, id: string, now: Date): Promise<JobRow> {
  const [row] = await db<JobRow[]>`
    UPDATE jobs SET status = 'cancelled', cancel_requested = true, finished_at = ${now}, updated_at = ${now}
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
