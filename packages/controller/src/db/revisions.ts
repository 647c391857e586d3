import type { Db } from "./connect.js";

export interface RevisionRow {
  tenant_id: string;
  revision_id: number;
  created_at: Date;
  created_by: string | null;
  reason: "ingest" | "rollback";
  rolled_back_from: number | null;
  digest: string;
  prefix_count_v4: number;
  prefix_count_v6: number;
  input_prefix_count: number;
  dropped_prefix_count: number;
  /** `action` and `excluded_prefix_count` are absent from revisions made before exclude modules. */
  modules: {
    module_id: string;
    name: string;
    community: string | null;
    prefix_count: number;
    action?: "announce" | "exclude";
    excluded_prefix_count?: number;
  }[];
}

// Every column but the content, which only the readers of the prefixes load.
const COLUMNS = [
  "tenant_id",
  "revision_id",
  "created_at",
  "created_by",
  "reason",
  "rolled_back_from",
  "digest",
  "prefix_count_v4",
  "prefix_count_v6",
  "input_prefix_count",
  "dropped_prefix_count",
  "modules",
];

/** Serialises revision writers of one tenant (next id, digest comparison) for the transaction. */
export async function lockTenantRevisions(db: Db, tenantId: string): Promise<void> {
  await db`SELECT pg_advisory_xact_lock(hashtextextended(${`rev:${tenantId}`}, 0))`;
}

export async function findCurrentRevision(db: Db, tenantId: string): Promise<RevisionRow | undefined> {
  const [row] = await db<RevisionRow[]>`SELECT ${db(COLUMNS)} FROM revisions WHERE tenant_id = ${tenantId} ORDER BY revision_id DESC LIMIT 1`;
  return row;
}

export async function findRevision(db: Db, tenantId: string, revisionId: number): Promise<RevisionRow | undefined> {
  const [row] = await db<RevisionRow[]>`SELECT ${db(COLUMNS)} FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId}`;
  return row;
}

export async function findRevisionContent(db: Db, tenantId: string, revisionId: number): Promise<Buffer | undefined> {
  const [row] = await db<{ content: Buffer }[]>`SELECT content FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId}`;
  return row?.content;
}

export async function insertRevision(db: Db, row: RevisionRow & { content: Buffer }): Promise<void> {
  await db`
    INSERT INTO revisions (tenant_id, revision_id, created_at, created_by, reason, rolled_back_from, digest, prefix_count_v4,
                           prefix_count_v6, input_prefix_count, dropped_prefix_count, modules, content)
    VALUES (${row.tenant_id}, ${row.revision_id}, ${row.created_at}, ${row.created_by}, ${row.reason}, ${row.rolled_back_from},
            ${row.digest}, ${row.prefix_count_v4}, ${row.prefix_count_v6}, ${row.input_prefix_count}, ${row.dropped_prefix_count},
            ${db.json(row.modules as never)}, ${row.content})`;
}

export async function listRevisions(db: Db, tenantId: string, f: { beforeId: number | null; limit: number }): Promise<RevisionRow[]> {
  return db<RevisionRow[]>`
    SELECT ${db(COLUMNS)} FROM revisions WHERE tenant_id = ${tenantId}
      ${f.beforeId === null ? db`` : db`AND revision_id < ${f.beforeId}`}
    ORDER BY revision_id DESC LIMIT ${f.limit + 1}`;
}

export async function listRevisionIds(db: Db, tenantId: string): Promise<{ revision_id: number; created_at: Date }[]> {
  return db<{ revision_id: number; created_at: Date }[]>`SELECT revision_id, created_at FROM revisions WHERE tenant_id = ${tenantId} ORDER BY revision_id`;
}

export async function deleteRevisions(db: Db, tenantId: string, ids: number[]): Promise<number> {
  if (!ids.length) return 0;
  const rows = await db`DELETE FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ANY(${ids}::int[]) RETURNING revision_id`;
  return rows.length;
}
