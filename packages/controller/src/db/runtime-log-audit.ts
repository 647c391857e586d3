import type { Db } from "./connect.js";
import { type KeysetPage, keysetPage } from "./tenant-table.js";

export interface CleanupAuditRow {
  id: string;
  tenant_id: string;
  at: Date;
  actor: string;
  actor_prefix: string;
  filename: string;
  mode: "truncate" | "delete";
  bytes_before: number | null;
  bytes_after: number | null;
  dry_run: boolean;
  result: string;
  error: string | null;
}

export async function insertCleanupAudit(db: Db, row: CleanupAuditRow): Promise<void> {
  await db`
    INSERT INTO runtime_log_cleanup_audit (id, tenant_id, at, actor, actor_prefix, filename, mode, bytes_before, bytes_after, dry_run, result, error)
    VALUES (${row.id}, ${row.tenant_id}, ${row.at}, ${row.actor}, ${row.actor_prefix}, ${row.filename}, ${row.mode},
            ${row.bytes_before}, ${row.bytes_after}, ${row.dry_run}, ${row.result}, ${row.error})`;
}

export async function listCleanupAudit(db: Db, tenantId: string, page: KeysetPage): Promise<CleanupAuditRow[]> {
  return db<CleanupAuditRow[]>`
    SELECT id, tenant_id, at, actor, actor_prefix, filename, mode, bytes_before::float8 AS bytes_before,
           bytes_after::float8 AS bytes_after, dry_run, result, error
    FROM runtime_log_cleanup_audit WHERE tenant_id = ${tenantId} ${keysetPage(db, page)}`;
}
