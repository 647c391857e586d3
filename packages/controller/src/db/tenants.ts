import type { Db } from "./connect.js";
import { type KeysetPage, keysetPage } from "./tenant-table.js";

export interface TenantRow {
  id: string;
  name: string;
  created_at: Date;
}

export async function insertTenant(db: Db, row: TenantRow): Promise<void> {
  await db`INSERT INTO tenants (id, name, created_at) VALUES (${row.id}, ${row.name}, ${row.created_at})`;
}

export async function findTenantById(db: Db, id: string): Promise<TenantRow | undefined> {
  const [row] = await db<TenantRow[]>`SELECT id, name, created_at FROM tenants WHERE id = ${id}`;
  return row;
}

export async function findTenantByName(db: Db, name: string): Promise<TenantRow | undefined> {
  const [row] = await db<TenantRow[]>`SELECT id, name, created_at FROM tenants WHERE name = ${name}`;
  return row;
}

export async function countTenants(db: Db): Promise<number> {
  const [row] = await db<{ n: number }[]>`SELECT count(*)::int AS n FROM tenants`;
  return row?.n ?? 0;
}

export async function listTenants(db: Db, page: KeysetPage): Promise<TenantRow[]> {
  return db<TenantRow[]>`SELECT id, name, created_at FROM tenants WHERE true ${keysetPage(db, page)}`;
}

/** Every tenant's id (a deployment has a handful; the controller's start ensures each one's event stream). */
export async function listTenantIds(db: Db): Promise<string[]> {
  const rows = await db<{ id: string }[]>`SELECT id FROM tenants ORDER BY id`;
  return rows.map((r) => r.id);
}
