import type { Db } from "./connect.js";
import { type KeysetPage, tenantTable } from "./tenant-table.js";

export interface DohProfileRow {
  id: string;
  tenant_id: string;
  name: string | null;
  url: string;
  method: "GET" | "POST";
  format: "wire" | "json";
  timeout_ms: number;
  /** Header name → value; every value sealed with the data key when headers_sealed. */
  headers: Record<string, string>;
  headers_sealed: boolean;
  created_at: Date;
  updated_at: Date;
}

export async function insertDohProfile(db: Db, row: DohProfileRow): Promise<void> {
  await db`
    INSERT INTO doh_profiles (id, tenant_id, name, url, method, format, timeout_ms, headers, headers_sealed, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.name}, ${row.url}, ${row.method}, ${row.format}, ${row.timeout_ms},
            ${db.json(row.headers)}, ${row.headers_sealed}, ${row.created_at}, ${row.updated_at})`;
}

export type DohProfileWrite = Pick<DohProfileRow, "name" | "url" | "method" | "format" | "timeout_ms" | "headers" | "headers_sealed" | "updated_at">;

const profiles = tenantTable<DohProfileRow>("doh_profiles");
export const { findById: findDohProfileById, findByName: findDohProfileByName, listAll: listAllDohProfiles, deleteById: deleteDohProfile } = profiles;

export function updateDohProfile(db: Db, tenantId: string, id: string, patch: DohProfileWrite): Promise<DohProfileRow> {
  const set = db`
    name = ${patch.name}, url = ${patch.url}, method = ${patch.method}, format = ${patch.format},
    timeout_ms = ${patch.timeout_ms}, headers = ${db.json(patch.headers)}, headers_sealed = ${patch.headers_sealed}, updated_at = ${patch.updated_at}`;
  return profiles.update(db, tenantId, id, set);
}

/** The ids among `ids` that are profiles of the tenant. */
export async function findExistingDohProfileIds(db: Db, tenantId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db<{ id: string }[]>`SELECT id FROM doh_profiles WHERE tenant_id = ${tenantId} AND id = ANY(${ids as string[]}::uuid[])`;
  return new Set(rows.map((r) => r.id));
}

export function listDohProfiles(db: Db, tenantId: string, page: KeysetPage): Promise<DohProfileRow[]> {
  return profiles.list(db, tenantId, page);
}

/** Profiles written before header values were sealed (and with any header at all). */
export async function listPlainHeaderProfiles(db: Db): Promise<{ id: string; headers: Record<string, string> }[]> {
  return db<{ id: string; headers: Record<string, string> }[]>`
    SELECT id, headers FROM doh_profiles WHERE NOT headers_sealed FOR UPDATE`;
}

export async function setSealedHeaders(db: Db, id: string, headers: Record<string, string>): Promise<void> {
  await db`UPDATE doh_profiles SET headers = ${db.json(headers)}, headers_sealed = true WHERE id = ${id}`;
}
