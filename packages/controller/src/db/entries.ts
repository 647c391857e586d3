import type { Db } from "./connect.js";

// The entry collections of a module. Reads and deletes are shared, keyed by EntryKind;
// writes differ by column and are one function per kind.

export type EntryKind = "as" | "domain" | "ip_range" | "country";

interface EntryBase {
  id: string;
  tenant_id: string;
  module_id: string;
  comment: string;
  created_at: Date;
  updated_at: Date;
}

export interface AsEntryRow extends EntryBase {
  /** Exactly one of asn and as_set is set. */
  asn: number | null;
  as_set: string | null;
}
export interface DomainEntryRow extends EntryBase {
  domain: string;
  include_subdomains: boolean;
}
export interface IpRangeEntryRow extends EntryBase {
  cidr: string;
}
export interface CountryEntryRow extends EntryBase {
  country: string;
}
export type EntryRow = AsEntryRow | DomainEntryRow | IpRangeEntryRow | CountryEntryRow;
export interface EntryRowOf {
  as: AsEntryRow;
  domain: DomainEntryRow;
  ip_range: IpRangeEntryRow;
  country: CountryEntryRow;
}

export const ENTRY_TABLES: Record<EntryKind, string> = { as: "as_entries", domain: "domain_entries", ip_range: "ip_range_entries", country: "country_entries" };

/** The kind's table as an escaped identifier. */
export function entryTable(db: Db, kind: EntryKind) {
  const name: string = ENTRY_TABLES[kind];
  return db(name);
}

// asn is bigint (postgres.js reads int8 as a string); it fits a double exactly.
const columns = (db: Db, kind: EntryKind) =>
  kind === "as"
    ? db`id, tenant_id, module_id, asn::float8 AS asn, as_set, comment, created_at, updated_at`
    : kind === "domain"
      ? db`id, tenant_id, module_id, domain, include_subdomains, comment, created_at, updated_at`
      : kind === "country"
        ? db`id, tenant_id, module_id, country, comment, created_at, updated_at`
        : db`id, tenant_id, module_id, cidr, comment, created_at, updated_at`;

export async function findEntryById<K extends EntryKind>(
  db: Db,
  kind: K,
  tenantId: string,
  moduleId: string,
  id: string,
  forUpdate = false,
): Promise<EntryRowOf[K] | undefined> {
  const [row] = await db<EntryRowOf[K][]>`
    SELECT ${columns(db, kind)} FROM ${entryTable(db, kind)}
    WHERE tenant_id = ${tenantId} AND module_id = ${moduleId} AND id = ${id} ${forUpdate ? db`FOR UPDATE` : db``}`;
  return row;
}

/**
 * A module's entries keyset by id: newest first for the API's pages (one row more than the
 * limit, to tell whether another page follows), oldest first for an export (the order rows were
 * added, so a file imported into an empty module exports as it was).
 */
async function listEntriesById<K extends EntryKind>(
  db: Db,
  kind: K,
  tenantId: string,
  moduleId: string,
  opts: { afterId: string | null; limit: number; newestFirst: boolean },
): Promise<EntryRowOf[K][]> {
  const after = opts.afterId === null ? db`` : opts.newestFirst ? db`AND id < ${opts.afterId}` : db`AND id > ${opts.afterId}`;
  return db<EntryRowOf[K][]>`
    SELECT ${columns(db, kind)} FROM ${entryTable(db, kind)}
    WHERE tenant_id = ${tenantId} AND module_id = ${moduleId} ${after}
    ORDER BY id ${opts.newestFirst ? db`DESC` : db``} LIMIT ${opts.newestFirst ? opts.limit + 1 : opts.limit}`;
}

export const listEntries = <K extends EntryKind>(db: Db, kind: K, tenantId: string, moduleId: string, opts: { afterId: string | null; limit: number }) =>
  listEntriesById(db, kind, tenantId, moduleId, { ...opts, newestFirst: true });

export const listEntriesForExport = <K extends EntryKind>(
  db: Db,
  kind: K,
  tenantId: string,
  moduleId: string,
  opts: { afterId: string | null; limit: number },
) => listEntriesById(db, kind, tenantId, moduleId, { ...opts, newestFirst: false });

/** Every entry of the tenant's modules of one kind, in value order (the catalog). */
export async function listAllEntriesOfTenant<K extends EntryKind>(db: Db, kind: K, tenantId: string): Promise<EntryRowOf[K][]> {
  const order = kind === "as" ? db`asn NULLS LAST, as_set` : kind === "domain" ? db`domain` : kind === "country" ? db`country` : db`network, cidr`;
  return db<EntryRowOf[K][]>`
    SELECT ${columns(db, kind)} FROM ${entryTable(db, kind)} WHERE tenant_id = ${tenantId} ORDER BY module_id, ${order}`;
}

export async function deleteEntry(db: Db, kind: EntryKind, tenantId: string, moduleId: string, id: string): Promise<void> {
  await db`DELETE FROM ${entryTable(db, kind)} WHERE tenant_id = ${tenantId} AND module_id = ${moduleId} AND id = ${id}`;
}

export async function countEntries(db: Db, kind: EntryKind, tenantId: string, moduleId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    SELECT count(*)::int AS n FROM ${entryTable(db, kind)} WHERE tenant_id = ${tenantId} AND module_id = ${moduleId}`;
  return row?.n ?? 0;
}

// Inserts answer false on a duplicate value (ON CONFLICT DO NOTHING): no pre-check, no race.

export async function insertAsEntry(db: Db, row: AsEntryRow): Promise<boolean> {
  const rows = await db`
    INSERT INTO as_entries (id, tenant_id, module_id, asn, as_set, comment, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.module_id}, ${row.asn}, ${row.as_set}, ${row.comment}, ${row.created_at}, ${row.updated_at})
    ON CONFLICT DO NOTHING RETURNING id`;
  return rows.length === 1;
}

export async function insertDomainEntry(db: Db, row: DomainEntryRow): Promise<boolean> {
  const rows = await db`
    INSERT INTO domain_entries (id, tenant_id, module_id, domain, include_subdomains, comment, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.module_id}, ${row.domain}, ${row.include_subdomains}, ${row.comment}, ${row.created_at}, ${row.updated_at})
    ON CONFLICT (module_id, domain) DO NOTHING RETURNING id`;
  return rows.length === 1;
}

export async function insertIpRangeEntry(db: Db, row: IpRangeEntryRow): Promise<boolean> {
  const rows = await db`
    INSERT INTO ip_range_entries (id, tenant_id, module_id, cidr, network, comment, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.module_id}, ${row.cidr}, ${row.cidr}::cidr, ${row.comment}, ${row.created_at}, ${row.updated_at})
    ON CONFLICT (module_id, cidr) DO NOTHING RETURNING id`;
  return rows.length === 1;
}

// Updates throw a unique_violation when the new value is taken (see pg-errors.ts).

export async function updateAsEntry(db: Db, row: AsEntryRow): Promise<void> {
  await db`
    UPDATE as_entries SET asn = ${row.asn}, as_set = ${row.as_set}, comment = ${row.comment}, updated_at = ${row.updated_at}
    WHERE tenant_id = ${row.tenant_id} AND module_id = ${row.module_id} AND id = ${row.id}`;
}

export async function updateDomainEntry(db: Db, row: DomainEntryRow): Promise<void> {
  await db`
    UPDATE domain_entries SET domain = ${row.domain}, include_subdomains = ${row.include_subdomains}, comment = ${row.comment}, updated_at = ${row.updated_at}
    WHERE tenant_id = ${row.tenant_id} AND module_id = ${row.module_id} AND id = ${row.id}`;
}

export async function updateIpRangeEntry(db: Db, row: IpRangeEntryRow): Promise<void> {
  await db`
    UPDATE ip_range_entries SET cidr = ${row.cidr}, network = ${row.cidr}::cidr, comment = ${row.comment}, updated_at = ${row.updated_at}
    WHERE tenant_id = ${row.tenant_id} AND module_id = ${row.module_id} AND id = ${row.id}`;
}

export async function insertCountryEntry(db: Db, row: CountryEntryRow): Promise<boolean> {
  const rows = await db`
    INSERT INTO country_entries (id, tenant_id, module_id, country, comment, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.module_id}, ${row.country}, ${row.comment}, ${row.created_at}, ${row.updated_at})
    ON CONFLICT (module_id, country) DO NOTHING RETURNING id`;
  return rows.length === 1;
}

export async function updateCountryEntry(db: Db, row: CountryEntryRow): Promise<void> {
  await db`
    UPDATE country_entries SET country = ${row.country}, comment = ${row.comment}, updated_at = ${row.updated_at}
    WHERE tenant_id = ${row.tenant_id} AND module_id = ${row.module_id} AND id = ${row.id}`;
}
