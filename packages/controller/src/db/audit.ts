import type { Db } from "./connect.js";
import { type KeysetPage, keysetPage, whereEquals } from "./tenant-table.js";

export interface AuditRow {
  id: string;
  tenant_id: string;
  at: Date;
  actor_key_id: string | null;
  actor_key_prefix: string | null;
  actor_role: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  severity: string;
  request_id: string | null;
  summary: string;
  changes: Record<string, { from: unknown; to: unknown }>;
  policy_id: string | null;
}

export async function insertAuditRecord(db: Db, row: AuditRow, enqueuePush: boolean): Promise<void> {
  await db`
    INSERT INTO audit_records (id, tenant_id, at, actor_key_id, actor_key_prefix, actor_role, action, resource_type,
                               resource_id, severity, request_id, summary, changes, policy_id)
    VALUES (${row.id}, ${row.tenant_id}, ${row.at}, ${row.actor_key_id}, ${row.actor_key_prefix}, ${row.actor_role},
            ${row.action}, ${row.resource_type}, ${row.resource_id}, ${row.severity}, ${row.request_id}, ${row.summary},
            ${db.json(row.changes as never)}, ${row.policy_id})`;
  if (enqueuePush) {
    await db`INSERT INTO audit_outbox (record_id, next_attempt_at) VALUES (${row.id}, ${row.at})`;
  }
}

export interface AuditFilter extends KeysetPage {
  action?: string | undefined;
  severity?: string | undefined;
  resource_type?: string | undefined;
  since?: string | undefined;
  until?: string | undefined;
}

export async function listAuditRecords(db: Db, tenantId: string, f: AuditFilter): Promise<AuditRow[]> {
  return db<AuditRow[]>`
    SELECT * FROM audit_records
    WHERE tenant_id = ${tenantId}
      ${whereEquals(db, "action", f.action)} ${whereEquals(db, "severity", f.severity)} ${whereEquals(db, "resource_type", f.resource_type)}
      ${f.since === undefined ? db`` : db`AND at >= ${f.since}`}
      ${f.until === undefined ? db`` : db`AND at < ${f.until}`}
      ${keysetPage(db, f)}`;
}

/**
 * Leases up to `limit` due outbox rows for `leaseSeconds` and returns their records, oldest
 * first. SKIP LOCKED lets several pushers (replicas) share the outbox without waiting.
 */
export async function leaseAuditOutbox(db: Db, now: Date, limit: number, leaseSeconds: number): Promise<(AuditRow & { attempts: number })[]> {
  return db<(AuditRow & { attempts: number })[]>`
    WITH due AS (
      SELECT record_id FROM audit_outbox WHERE next_attempt_at <= ${now}
      ORDER BY next_attempt_at, record_id LIMIT ${limit} FOR UPDATE SKIP LOCKED
    ), leased AS (
      UPDATE audit_outbox o SET next_attempt_at = ${now}::timestamptz + make_interval(secs => ${leaseSeconds})
      FROM due WHERE o.record_id = due.record_id RETURNING o.record_id, o.attempts
    )
    SELECT r.*, leased.attempts FROM leased JOIN audit_records r ON r.id = leased.record_id ORDER BY r.id`;
}

export async function deleteAuditOutbox(db: Db, recordId: string): Promise<void> {
  await db`DELETE FROM audit_outbox WHERE record_id = ${recordId}`;
}

export async function deferAuditOutbox(db: Db, recordId: string, nextAttemptAt: Date, error: string): Promise<void> {
  await db`
    UPDATE audit_outbox SET attempts = attempts + 1, next_attempt_at = ${nextAttemptAt}, last_error = ${error}
    WHERE record_id = ${recordId}`;
}

export async function countAuditOutbox(db: Db): Promise<number> {
  const [row] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM audit_outbox`;
  return row?.n ?? 0;
}
