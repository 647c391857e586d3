import type { Db } from "./connect.js";

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

export async function findDohProfileById(db: Db, tenantId: string, id: string, forUpdate = false): Promise<DohProfileRow | undefined> {
  const [row] = forUpdate
    ? await db<DohProfileRow[]>`SELECT * FROM doh_profiles WHERE tenant_id = ${tenantId} AND id = ${id} FOR UPDATE`
    : await db<DohProfileRow[]>`SELECT * FROM doh_profiles WHERE tenant_id = ${tenantId} AND id = ${id}`;
  return row;
}

export async function findDohProfileByName(db: Db, tenantId: string, name: string): Promise<DohProfileRow | undefined> {
  const [row] = await db<DohProfileRow[]>`SELECT * FROM doh_profiles WHERE tenant_id = ${tenantId} AND name = ${name}`;
  return row;
}

/** The ids among `ids` that are profiles of the tenant. */
export async function findExistingDohProfileIds(db: Db, tenantId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db<{ id: string }[]>`SELECT id FROM doh_profiles WHERE tenant_id = ${tenantId} AND id = ANY(${ids as string[]}::uuid[])`;
  return new Set(rows.map((r) => r.id));
}

export async function listDohProfiles(db: Db, tenantId: string, opts: { afterId: string | null; limit: number }): Promise<DohProfileRow[]> {
  return db<DohProfileRow[]>`
    SELECT * FROM doh_profiles
    WHERE tenant_id = ${tenantId} ${opts.afterId === null ? db`` : db`AND id < ${opts.afterId}`}
    ORDER BY id DESC LIMIT ${opts.limit + 1}`;
}

export async function listAllDohProfiles(db: Db, tenantId: string): Promise<DohProfileRow[]> {
  return db<DohProfileRow[]>`SELECT * FROM doh_profiles WHERE tenant_id = ${tenantId} ORDER BY id`;
}

export async function updateDohProfile(
  db: Db,
  tenantId: string,
  id: string,
  patch: Pick<DohProfileRow, "name" | "url" | "method" | "format" | "timeout_ms" | "headers" | "headers_sealed" | "updated_at">,
): Promise<DohProfileRow> {
  const [row] = await db<DohProfileRow[]>`
    UPDATE doh_profiles
    SET name = ${patch.name}, url = ${patch.url}, method = ${patch.method}, format = ${patch.format},
        timeout_ms = ${patch.timeout_ms}, headers = ${db.json(patch.headers)}, headers_sealed = ${patch.headers_sealed}, updated_at = ${patch.updated_at}
    WHERE tenant_id = ${tenantId} AND id = ${id} RETURNING *`;
  return row!;
}

export async function deleteDohProfile(db: Db, tenantId: string, id: string): Promise<void> {
  await db`DELETE FROM doh_profiles WHERE tenant_id = ${tenantId} AND id = ${id}`;
}

/** Profiles written before header values were sealed (and with any header at all). */
export async function listPlainHeaderProfiles(db: Db): Promise<{ id: string; headers: Record<string, string> }[]> {
  return db<{ id: string; headers: Record<string, string> }[]>`
    SELECT id, headers FROM doh_profiles WHERE NOT headers_sealed FOR UPDATE`;
}

export async function setSealedHeaders(db: Db, id: string, headers: Record<string, string>): Promise<void> {
  await db`UPDATE doh_profiles SET headers = ${db.json(headers)}, headers_sealed = true WHERE id = ${id}`;
}
