import type { Db } from "./connect.js";
import { type KeysetPage, keysetPage } from "./tenant-table.js";

export interface CdnSourceRow {
  id: string;
  tenant_id: string;
  module_id: string;
  url: string;
  format: "text" | "json";
  json_path: string | null;
  enabled: boolean;
  allow_empty: boolean;
  last_refreshed_at: Date | null;
  last_error: string | null;
  last_prefix_count: number | null;
  created_at: Date;
  updated_at: Date;
}

export type CdnSourceWrite = Pick<CdnSourceRow, "url" | "format" | "json_path" | "enabled" | "allow_empty" | "updated_at">;

/** False when the module already reads this URL with this format and path. */
export async function insertCdnSource(db: Db, row: CdnSourceRow): Promise<boolean> {
  const rows = await db`
    INSERT INTO cdn_sources (id, tenant_id, module_id, url, format, json_path, enabled, allow_empty,
                             last_refreshed_at, last_error, last_prefix_count, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.module_id}, ${row.url}, ${row.format}, ${row.json_path}, ${row.enabled}, ${row.allow_empty},
            ${row.last_refreshed_at}, ${row.last_error}, ${row.last_prefix_count}, ${row.created_at}, ${row.updated_at})
    ON CONFLICT DO NOTHING RETURNING id`;
  return rows.length === 1;
}

export async function findCdnSourceById(db: Db, tenantId: string, moduleId: string, id: string, forUpdate = false): Promise<CdnSourceRow | undefined> {
  const [row] = await db<CdnSourceRow[]>`
    SELECT * FROM cdn_sources WHERE tenant_id = ${tenantId} AND module_id = ${moduleId} AND id = ${id} ${forUpdate ? db`FOR UPDATE` : db``}`;
  return row;
}

export async function listCdnSources(db: Db, tenantId: string, moduleId: string, page: KeysetPage): Promise<CdnSourceRow[]> {
  return db<CdnSourceRow[]>`SELECT * FROM cdn_sources WHERE tenant_id = ${tenantId} AND module_id = ${moduleId} ${keysetPage(db, page)}`;
}

/** Every source of the tenant, by module then age (the catalog). */
export async function listAllCdnSourcesOfTenant(db: Db, tenantId: string): Promise<CdnSourceRow[]> {
  return db<CdnSourceRow[]>`SELECT * FROM cdn_sources WHERE tenant_id = ${tenantId} ORDER BY module_id, id`;
}

/** Throws a unique_violation when another source of the module has the same URL, format and path. */
export async function updateCdnSource(db: Db, tenantId: string, moduleId: string, id: string, patch: CdnSourceWrite): Promise<CdnSourceRow> {
  const [row] = await db<CdnSourceRow[]>`
    UPDATE cdn_sources
    SET url = ${patch.url}, format = ${patch.format}, json_path = ${patch.json_path}, enabled = ${patch.enabled},
        allow_empty = ${patch.allow_empty}, updated_at = ${patch.updated_at}
    WHERE tenant_id = ${tenantId} AND module_id = ${moduleId} AND id = ${id} RETURNING *`;
  return row!;
}

export async function deleteCdnSource(db: Db, tenantId: string, moduleId: string, id: string): Promise<void> {
  await db`DELETE FROM cdn_sources WHERE tenant_id = ${tenantId} AND module_id = ${moduleId} AND id = ${id}`;
}
