import type { MaintenanceAction } from "@rlc/shared/schemas";
import type { Db } from "./connect.js";
import { type KeysetPage, tenantTable, whereEquals } from "./tenant-table.js";

export interface MaintenancePolicyRow {
  id: string;
  tenant_id: string;
  name: string;
  enabled: boolean;
  interval_minutes: number;
  actions: MaintenanceAction[];
  last_run_at: Date | null;
  next_run_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertMaintenancePolicy(db: Db, row: MaintenancePolicyRow): Promise<void> {
  await db`
    INSERT INTO maintenance_policies (id, tenant_id, name, enabled, interval_minutes, actions, last_run_at, next_run_at, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.name}, ${row.enabled}, ${row.interval_minutes}, ${db.json(row.actions as never)},
            ${row.last_run_at}, ${row.next_run_at}, ${row.created_at}, ${row.updated_at})`;
}

export type MaintenancePolicyWrite = Pick<MaintenancePolicyRow, "name" | "enabled" | "interval_minutes" | "actions" | "next_run_at" | "updated_at">;

const policies = tenantTable<MaintenancePolicyRow>("maintenance_policies");
export const { findById: findMaintenancePolicyById, findByName: findMaintenancePolicyByName, deleteById: deleteMaintenancePolicy } = policies;

export function updateMaintenancePolicy(db: Db, tenantId: string, id: string, patch: MaintenancePolicyWrite): Promise<MaintenancePolicyRow> {
  const set = db`
    name = ${patch.name}, enabled = ${patch.enabled}, interval_minutes = ${patch.interval_minutes},
    actions = ${db.json(patch.actions as never)}, next_run_at = ${patch.next_run_at}, updated_at = ${patch.updated_at}`;
  return policies.update(db, tenantId, id, set);
}

export function listMaintenancePolicies(db: Db, tenantId: string, f: KeysetPage & { enabled?: boolean | undefined }): Promise<MaintenancePolicyRow[]> {
  return policies.list(db, tenantId, f, whereEquals(db, "enabled", f.enabled));
}

/** A run finished: `last_run_at` moves; false when the policy is gone. */
export async function markMaintenancePolicyRun(db: Db, tenantId: string, id: string, at: Date): Promise<boolean> {
  const rows = await db`UPDATE maintenance_policies SET last_run_at = ${at} WHERE tenant_id = ${tenantId} AND id = ${id} RETURNING id`;
  return rows.length === 1;
}

/**
 * Locks the enabled policies whose time has come, across tenants. SKIP LOCKED: a policy that
 * someone is editing right now is simply taken at the next pass.
 */
export async function claimDueMaintenancePolicies(db: Db, now: Date, limit: number): Promise<MaintenancePolicyRow[]> {
  return db<MaintenancePolicyRow[]>`
    SELECT * FROM maintenance_policies WHERE enabled AND next_run_at <= ${now}
    ORDER BY next_run_at LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
}

export async function setMaintenancePolicyNextRun(db: Db, id: string, nextRunAt: Date): Promise<void> {
  await db`UPDATE maintenance_policies SET next_run_at = ${nextRunAt} WHERE id = ${id}`;
}

/** Whether a job of `type` (for `policyId` when given) is queued or running for the tenant. */
export async function hasActiveJob(db: Db, tenantId: string, type: string, policyId?: string): Promise<boolean> {
  const [row] = await db<{ n: number }[]>`
    SELECT count(*)::int AS n FROM jobs
    WHERE tenant_id = ${tenantId} AND type = ${type} AND status IN ('queued', 'running')
      ${policyId === undefined ? db`` : db`AND params->>'policy_id' = ${policyId}`}`;
  return (row?.n ?? 0) > 0;
}

// Audit retention never deletes a record that still waits in the push outbox: a portal that
// is down must lose nothing.

export async function countAuditRecordsBefore(db: Db, tenantId: string, before: Date): Promise<{ count: number; ids: string[] }> {
  const [row] = await db<{ n: number }[]>`
    SELECT count(*)::int AS n FROM audit_records r
    WHERE r.tenant_id = ${tenantId} AND r.at < ${before} AND NOT EXISTS (SELECT 1 FROM audit_outbox o WHERE o.record_id = r.id)`;
  const ids = await db<{ id: string }[]>`
    SELECT r.id FROM audit_records r
    WHERE r.tenant_id = ${tenantId} AND r.at < ${before} AND NOT EXISTS (SELECT 1 FROM audit_outbox o WHERE o.record_id = r.id)
    ORDER BY r.at, r.id LIMIT 100`;
  return { count: row?.n ?? 0, ids: ids.map((r) => r.id) };
}

export async function deleteAuditRecordsBefore(db: Db, tenantId: string, before: Date): Promise<number> {
  const rows = await db`
    DELETE FROM audit_records r
    WHERE r.tenant_id = ${tenantId} AND r.at < ${before} AND NOT EXISTS (SELECT 1 FROM audit_outbox o WHERE o.record_id = r.id)
    RETURNING r.id`;
  return rows.length;
}

/** The jobs `deleteFinishedJobsBefore` (db/jobs.ts) would delete. */
export async function countFinishedJobsBefore(db: Db, tenantId: string, before: Date): Promise<{ count: number; ids: string[] }> {
  const [row] = await db<{ n: number }[]>`
    SELECT count(*)::int AS n FROM jobs
    WHERE tenant_id = ${tenantId} AND status IN ('succeeded', 'failed', 'cancelled') AND finished_at < ${before}`;
  const ids = await db<{ id: string }[]>`
    SELECT id FROM jobs
    WHERE tenant_id = ${tenantId} AND status IN ('succeeded', 'failed', 'cancelled') AND finished_at < ${before}
    ORDER BY finished_at, id LIMIT 100`;
  return { count: row?.n ?? 0, ids: ids.map((r) => r.id) };
}

export interface DatabaseSizeRow {
  name: string;
  size_bytes: number;
  server_version: string;
  max_connections: number | null;
}

export async function findDatabaseSize(db: Db): Promise<DatabaseSizeRow> {
  const [row] = await db<DatabaseSizeRow[]>`
    SELECT current_database() AS name, pg_database_size(current_database())::float8 AS size_bytes,
           current_setting('server_version') AS server_version,
           current_setting('max_connections', true)::int AS max_connections`;
  return row!;
}

export interface TableStatusRow {
  schema: string;
  name: string;
  size_bytes: number;
  row_estimate: number;
  dead_tuples: number | null;
  last_vacuum_at: Date | null;
  last_analyze_at: Date | null;
}

/**
 * Every ordinary table outside the system schemas, largest first. Tables come from pg_class
 * and the statistics collector's view is only LEFT JOINed: where it is empty (a fresh server,
 * the embedded database), sizes and estimates still answer and the counters are null.
 * reltuples is -1 until the table's first ANALYZE (PostgreSQL 14+); then n_live_tup stands in.
 */
export async function listTableStatus(db: Db): Promise<TableStatusRow[]> {
  return db<TableStatusRow[]>`
    SELECT n.nspname AS schema, c.relname AS name,
           pg_total_relation_size(c.oid)::float8 AS size_bytes,
           (CASE WHEN c.reltuples >= 0 THEN c.reltuples ELSE COALESCE(s.n_live_tup, 0) END)::float8 AS row_estimate,
           s.n_dead_tup::float8 AS dead_tuples,
           GREATEST(s.last_vacuum, s.last_autovacuum) AS last_vacuum_at,
           GREATEST(s.last_analyze, s.last_autoanalyze) AS last_analyze_at
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
    WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
    ORDER BY size_bytes DESC, n.nspname, c.relname`;
}

export interface ConnectionCountsRow {
  total: number;
  active: number;
  idle: number;
  idle_in_transaction: number;
}

/** Client sessions on this database (background workers have no datname and are left out). */
export async function countConnections(db: Db): Promise<ConnectionCountsRow> {
  const [row] = await db<ConnectionCountsRow[]>`
    SELECT count(*)::int AS total,
           count(*) FILTER (WHERE state = 'active')::int AS active,
           count(*) FILTER (WHERE state = 'idle')::int AS idle,
           count(*) FILTER (WHERE state LIKE 'idle in transaction%')::int AS idle_in_transaction
    FROM pg_stat_activity WHERE datname = current_database()`;
  return row ?? { total: 0, active: 0, idle: 0, idle_in_transaction: 0 };
}

/** ANALYZE of every table the connected role may analyze (it may run inside a transaction, unlike VACUUM). */
export async function analyzeDatabase(db: Db): Promise<void> {
  await db`ANALYZE`;
}
