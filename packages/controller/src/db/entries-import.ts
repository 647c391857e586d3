import type { Db } from "./connect.js";
import { type EntryKind, entryTable } from "./entries.js";

// CSV import as set operations: the file's rows are staged in a temporary table in batches of
// INSERT … SELECT FROM unnest(arrays), then counted, deleted, updated and inserted against the
// module's entries with four statements, whatever the number of rows.
// Measured on 100,000 IP ranges: staging ≈ 0.3 s, apply ≈ 1–2 s (the GiST index dominates).
// COPY FROM STDIN would stage faster but hangs on the embedded PGlite database.

export interface StagedRows {
  /** uuidv7, in file order: ids of the rows that turn out new. */
  ids: string[];
  /** Canonical values. */
  values: string[];
  comments: string[];
  /** include_subdomains (DOMAINS); ignored by the other kinds. */
  flags: boolean[];
}

export interface ImportColumns {
  /** The file has a comment column: existing comments follow it. Otherwise they are kept. */
  comment: boolean;
  /** The file has an include_subdomains column (DOMAINS). */
  flag: boolean;
}

export async function createImportStage(db: Db): Promise<void> {
  await db`CREATE TEMPORARY TABLE entry_import (id uuid NOT NULL, value text NOT NULL, comment text NOT NULL, flag boolean NOT NULL) ON COMMIT DROP`;
}

export async function stageImportRows(db: Db, rows: StagedRows): Promise<void> {
  // postgres.js sends a JS boolean array with the element type, not as boolean[]: text it is.
  const flags = rows.flags.map((f) => (f ? "t" : "f"));
  await db`
    INSERT INTO entry_import (id, value, comment, flag)
    SELECT u.id, u.value, u.comment, u.flag::boolean
    FROM unnest(${rows.ids}::uuid[], ${rows.values}::text[], ${rows.comments}::text[], ${flags}::text[]) AS u(id, value, comment, flag)`;
}

// An AS entry's CSV value is an ASN (digits) or an AS-SET name (never all digits).
const asMatch = (db: Db) => db`CASE WHEN s.value ~ '^[0-9]+$' THEN e.asn = s.value::bigint ELSE e.as_set = s.value END`;

const matches = (db: Db, kind: EntryKind) =>
  kind === "as" ? asMatch(db) : kind === "domain" ? db`e.domain = s.value` : kind === "country" ? db`e.country = s.value` : db`e.cidr = s.value`;

const differs = (db: Db, kind: EntryKind, cols: ImportColumns) => db`
  ((${cols.comment}::boolean AND e.comment <> s.comment)
   ${kind === "domain" ? db`OR (${cols.flag}::boolean AND e.include_subdomains <> s.flag)` : db``})`;

export async function countImportChanges(
  db: Db,
  kind: EntryKind,
  tenantId: string,
  moduleId: string,
  cols: ImportColumns,
): Promise<{ created: number; updated: number; unchanged: number; deleted: number }> {
  const table = entryTable(db, kind);
  const [row] = await db<{ created: number; updated: number; unchanged: number; existing: number }[]>`
    SELECT count(*) FILTER (WHERE e.id IS NULL)::int AS created,
           count(*) FILTER (WHERE e.id IS NOT NULL AND ${differs(db, kind, cols)})::int AS updated,
           count(*) FILTER (WHERE e.id IS NOT NULL AND NOT ${differs(db, kind, cols)})::int AS unchanged,
           (SELECT count(*) FROM ${table} WHERE tenant_id = ${tenantId} AND module_id = ${moduleId})::int AS existing
    FROM entry_import s LEFT JOIN ${table} e ON e.tenant_id = ${tenantId} AND e.module_id = ${moduleId} AND ${matches(db, kind)}`;
  const r = row!;
  // Values are distinct in the file, so each existing entry matches at most one row.
  return { created: r.created, updated: r.updated, unchanged: r.unchanged, deleted: r.existing - r.updated - r.unchanged };
}

/** `replace`: the entries whose value is not in the file. */
export async function deleteUnstagedEntries(db: Db, kind: EntryKind, tenantId: string, moduleId: string): Promise<number> {
  const rows = await db`
    DELETE FROM ${entryTable(db, kind)} e
    WHERE e.tenant_id = ${tenantId} AND e.module_id = ${moduleId}
      AND NOT EXISTS (SELECT 1 FROM entry_import s WHERE ${matches(db, kind)})`;
  return rows.count;
}

export async function updateStagedEntries(db: Db, kind: EntryKind, tenantId: string, moduleId: string, cols: ImportColumns, now: Date): Promise<number> {
  const rows = await db`
    UPDATE ${entryTable(db, kind)} e
    SET comment = CASE WHEN ${cols.comment}::boolean THEN s.comment ELSE e.comment END,
        ${kind === "domain" ? db`include_subdomains = CASE WHEN ${cols.flag}::boolean THEN s.flag ELSE e.include_subdomains END,` : db``}
        updated_at = ${now}
    FROM entry_import s
    WHERE e.tenant_id = ${tenantId} AND e.module_id = ${moduleId} AND ${matches(db, kind)} AND ${differs(db, kind, cols)}`;
  return rows.count;
}

export async function insertStagedEntries(db: Db, kind: EntryKind, tenantId: string, moduleId: string, now: Date): Promise<number> {
  const table = entryTable(db, kind);
  const fresh = db`FROM entry_import s WHERE NOT EXISTS (
    SELECT 1 FROM ${table} e WHERE e.tenant_id = ${tenantId} AND e.module_id = ${moduleId} AND ${matches(db, kind)})`;
  const rows =
    kind === "as"
      ? await db`
          INSERT INTO as_entries (id, tenant_id, module_id, asn, as_set, comment, created_at, updated_at)
          SELECT s.id, ${tenantId}, ${moduleId}, CASE WHEN s.value ~ '^[0-9]+$' THEN s.value::bigint END,
                 CASE WHEN s.value ~ '^[0-9]+$' THEN NULL ELSE s.value END, s.comment, ${now}, ${now} ${fresh}`
      : kind === "domain"
        ? await db`
          INSERT INTO domain_entries (id, tenant_id, module_id, domain, include_subdomains, comment, created_at, updated_at)
          SELECT s.id, ${tenantId}, ${moduleId}, s.value, s.flag, s.comment, ${now}, ${now} ${fresh}`
        : kind === "country"
          ? await db`
          INSERT INTO country_entries (id, tenant_id, module_id, country, comment, created_at, updated_at)
          SELECT s.id, ${tenantId}, ${moduleId}, s.value, s.comment, ${now}, ${now} ${fresh}`
          : await db`
          INSERT INTO ip_range_entries (id, tenant_id, module_id, cidr, network, comment, created_at, updated_at)
          SELECT s.id, ${tenantId}, ${moduleId}, s.value, s.value::cidr, s.comment, ${now}, ${now} ${fresh}`;
  return rows.count;
}
