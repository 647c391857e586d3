import type { Db } from "./connect.js";

/*
 * What the metrics read of the shared state at scrape time: one statement per figure, each
 * answering a handful of grouped rows (by tenant, type, status) or one row per enrolled speaker,
 * on the partial indexes the queue and the outbox already have. Any replica answers the same,
 * since the figures come from PostgreSQL and not from a process's memory.
 *
 * Each per-tenant figure is read for one tenant (`GET /v1/metrics` with that tenant's key) or
 * for all of them (`tenantId` null: the public `/metrics`' totals and the deployment's
 * superadmins), the tenant's condition in the statement rather than a filter afterwards, so a
 * tenant's scrape never loads another tenant's rows.
 */

/** `AND <column> = tenantId`, or nothing when every tenant is read. */
const ofTenant = (db: Db, tenantId: string | null, column = "tenant_id") => (tenantId === null ? db`` : db`AND ${db(column)} = ${tenantId}`);

export interface ActiveJobsRow {
  tenant_id: string;
  type: string;
  status: "queued" | "running" | "awaiting";
  count: number;
  /** The oldest queued job whose `run_after` has come (null: none is due yet). */
  oldest_due_at: Date | null;
}

/**
 * Jobs not yet ended, by tenant, type and status: one branch per status, each on that status's
 * partial index. Measured on 500,000 jobs with 2,500 queued or running spread one per heap
 * block (the worst case; live jobs are the newest rows, so they share blocks): 200 ms median,
 * where one `status IN (…)` scan ran sequentially in 380-430 ms. The heap fetches for `type`
 * are the cost; an index on (tenant_id, type) per status would make it index-only.
 */
export async function countActiveJobs(db: Db, now: Date, tenantId: string | null): Promise<ActiveJobsRow[]> {
  return db<ActiveJobsRow[]>`
    SELECT tenant_id, type, 'queued' AS status, count(*)::int AS count, min(run_after) FILTER (WHERE run_after <= ${now}) AS oldest_due_at
    FROM jobs WHERE status = 'queued' ${ofTenant(db, tenantId)} GROUP BY tenant_id, type
    UNION ALL
    SELECT tenant_id, type, 'running', count(*)::int, NULL FROM jobs WHERE status = 'running' ${ofTenant(db, tenantId)} GROUP BY tenant_id, type
    UNION ALL
    SELECT tenant_id, type, 'awaiting', count(*)::int, NULL FROM jobs WHERE status = 'awaiting' ${ofTenant(db, tenantId)} GROUP BY tenant_id, type`;
}

/** The columns a speaker's `sync_status` is decided from, reduced to what the decision reads. */
export interface SpeakerSyncGroupRow {
  tenant_id: string;
  reported: boolean;
  dispatch_failed: boolean;
  has_error: boolean;
  has_desired: boolean;
  applied_is_desired: boolean;
  count: number;
}

/** Speakers grouped by the inputs of their sync status (a few rows per tenant, whatever the fleet's size). */
export async function countSpeakersBySyncInputs(db: Db, tenantId: string | null): Promise<SpeakerSyncGroupRow[]> {
  return db<SpeakerSyncGroupRow[]>`
    SELECT tenant_id,
           last_report_at IS NOT NULL AS reported,
           dispatch_status = 'failed' AS dispatch_failed,
           last_error IS NOT NULL AS has_error,
           desired_revision_id IS NOT NULL AS has_desired,
           applied_revision_id IS NOT DISTINCT FROM desired_revision_id AS applied_is_desired,
           count(*)::int AS count
    FROM speakers WHERE true ${ofTenant(db, tenantId)}
    GROUP BY 1, 2, 3, 4, 5, 6`;
}

export interface SpeakerReportRow {
  tenant_id: string;
  speaker_id: string;
  name: string;
  last_report_at: Date | null;
}

/** Enrolled remote speakers and when their agent last reported (null: never), at most `limit`. */
export async function listSpeakerReportTimes(db: Db, tenantId: string | null, limit: number): Promise<SpeakerReportRow[]> {
  return db<SpeakerReportRow[]>`
    SELECT tenant_id, id AS speaker_id, name, last_report_at
    FROM speakers WHERE mode = 'remote' AND enrolled_at IS NOT NULL ${ofTenant(db, tenantId)}
    ORDER BY tenant_id, id LIMIT ${limit}`;
}

export interface LatestRevisionRow {
  tenant_id: string;
  revision_id: number;
  prefix_count_v4: number;
  prefix_count_v6: number;
}

/** Each tenant's newest revision and its prefix counts (one index probe per tenant). */
export async function listLatestRevisions(db: Db, tenantId: string | null): Promise<LatestRevisionRow[]> {
  return db<LatestRevisionRow[]>`
    SELECT t.id AS tenant_id, r.revision_id, r.prefix_count_v4, r.prefix_count_v6
    FROM (SELECT id FROM tenants WHERE true ${ofTenant(db, tenantId, "id")}) t
    CROSS JOIN LATERAL (
      SELECT revision_id, prefix_count_v4, prefix_count_v6 FROM revisions
      WHERE tenant_id = t.id ORDER BY revision_id DESC LIMIT 1
    ) r`;
}

/** Enabled modules whose last refresh reported failed sources, by tenant. */
export async function countModulesWithRefreshErrors(db: Db, tenantId: string | null): Promise<{ tenant_id: string; count: number }[]> {
  return db<{ tenant_id: string; count: number }[]>`
    SELECT tenant_id, count(*)::int AS count FROM modules
    WHERE enabled AND last_refresh_error IS NOT NULL ${ofTenant(db, tenantId)} GROUP BY tenant_id`;
}

/**
 * Audit records still to push to the portal, and the oldest one's time. Record ids are UUIDv7
 * (time-ordered), so the oldest is the smallest id: one primary-key probe, where a join of the
 * outbox with the records took 52 ms with 1,000 waiting among 200,000 records.
 */
export async function findAuditOutboxBacklog(db: Db): Promise<{ count: number; oldest_at: Date | null }> {
  const [row] = await db<{ count: number; oldest_at: Date | null }[]>`
    SELECT (SELECT count(*)::int FROM audit_outbox) AS count,
           (SELECT r.at FROM audit_records r WHERE r.id = (SELECT record_id FROM audit_outbox ORDER BY record_id LIMIT 1)) AS oldest_at`;
  return row ?? { count: 0, oldest_at: null };
}

/** Tenant ids and names, so dashboards can show a name for the `tenant` label. */
export async function listTenantNames(db: Db, tenantId: string | null, limit: number): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`SELECT id, name FROM tenants WHERE true ${ofTenant(db, tenantId, "id")} ORDER BY id LIMIT ${limit}`;
}
