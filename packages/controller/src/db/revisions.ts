import type { Db } from "./connect.js";

export interface RevisionRow {
  tenant_id: string;
  revision_id: number;
  created_at: Date;
  created_by: string | null;
  reason: "ingest" | "rollback";
  rolled_back_from: number | null;
  digest: string;
  /** How `digest` was computed (migration 0031): 1 the SHA-256 of the lines, 2 of their groups (revision-digest.ts). */
  digest_scheme: number;
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
  "digest_scheme",
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

/**
 * How a revision's content is stored (migration 0025): whole when `parent_id` is null, else a
 * change against revision `parent_id`, the `chain_depth`-th since the last whole one, the chain
 * holding `chain_changes` entries (revision-store.ts reads and writes them).
 */
export interface StoredContent {
  content: Buffer;
  parent_id: number | null;
  chain_depth: number;
  chain_changes: number;
  /** A content stored whole because its chain was full: its parent and the (small) change from it, for diffs (migration 0030). */
  link_parent_id?: number | null;
  link_change?: Buffer | null;
}

/** The content column as stored: whole or a change (parent_id says which; revision-store.ts). */
export async function findRevisionContent(db: Db, tenantId: string, revisionId: number): Promise<Buffer | undefined> {
  return (await findStoredContent(db, tenantId, revisionId))?.content;
}

export async function findStoredContent(db: Db, tenantId: string, revisionId: number): Promise<StoredContent | undefined> {
  const [row] = await db<StoredContent[]>`
    SELECT content, parent_id, chain_depth, chain_changes FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId}`;
  return row;
}

/**
 * The revision and the revisions its content is stored against, newest first, down to the
 * first stored whole (one query; the chain is at most a few revisions long).
 */
export async function findChainLinks(db: Db, tenantId: string, revisionId: number): Promise<{ revision_id: number; parent_id: number | null }[]> {
  return db<{ revision_id: number; parent_id: number | null }[]>`
    WITH RECURSIVE chain AS (
      SELECT revision_id, parent_id FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId}
      UNION ALL
      SELECT r.revision_id, r.parent_id FROM revisions r JOIN chain c ON r.tenant_id = ${tenantId} AND r.revision_id = c.parent_id)
    SELECT revision_id, parent_id FROM chain ORDER BY revision_id DESC`;
}

/** The stored content of each of `ids`, by id. */
export async function findStoredContents(db: Db, tenantId: string, ids: number[]): Promise<Map<number, StoredContent>> {
  const rows = await db<(StoredContent & { revision_id: number })[]>`
    SELECT revision_id, content, parent_id, chain_depth, chain_changes, link_parent_id, link_change FROM revisions
     WHERE tenant_id = ${tenantId} AND revision_id = ANY(${ids}::int[])`;
  return new Map(rows.map(({ revision_id, ...row }) => [revision_id, row]));
}

/**
 * The revision and the revisions before it that a diff can walk through, newest first: each
 * one's parent, or the parent its link names when it is stored whole (migration 0030), at most
 * `limit` of them (the walk ends at a revision with neither, or at an id no longer stored).
 */
export async function findDiffLinks(db: Db, tenantId: string, revisionId: number, limit: number): Promise<{ revision_id: number; parent_id: number | null }[]> {
  return db<{ revision_id: number; parent_id: number | null }[]>`
    WITH RECURSIVE chain AS (
      SELECT revision_id, COALESCE(parent_id, link_parent_id) AS parent_id, 1 AS n FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId}
      UNION ALL
      SELECT r.revision_id, COALESCE(r.parent_id, r.link_parent_id), c.n + 1 FROM revisions r
        JOIN chain c ON r.tenant_id = ${tenantId} AND r.revision_id = c.parent_id AND r.revision_id < c.revision_id
       WHERE c.n < ${limit})
    SELECT revision_id, parent_id FROM chain ORDER BY revision_id DESC`;
}

/** Forgets the links (migration 0030) to revisions about to be deleted. */
export async function clearLinksTo(db: Db, tenantId: string, ids: number[]): Promise<void> {
  if (!ids.length) return;
  await db`UPDATE revisions SET link_parent_id = NULL, link_change = NULL WHERE tenant_id = ${tenantId} AND link_parent_id = ANY(${ids}::int[])`;
}

/** The chain columns alone (the writer of the next revision decides from them). */
export async function findChain(db: Db, tenantId: string, revisionId: number): Promise<Omit<StoredContent, "content"> | undefined> {
  const [row] = await db<Omit<StoredContent, "content">[]>`
    SELECT parent_id, chain_depth, chain_changes FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId}`;
  return row;
}

export async function insertRevision(db: Db, row: RevisionRow & { content: Buffer } & Partial<Omit<StoredContent, "content">>): Promise<void> {
  await db`
    INSERT INTO revisions (tenant_id, revision_id, created_at, created_by, reason, rolled_back_from, digest, digest_scheme,
                           prefix_count_v4, prefix_count_v6, input_prefix_count, dropped_prefix_count, modules, content, parent_id,
                           chain_depth, chain_changes, link_parent_id, link_change)
    VALUES (${row.tenant_id}, ${row.revision_id}, ${row.created_at}, ${row.created_by}, ${row.reason}, ${row.rolled_back_from},
            ${row.digest}, ${row.digest_scheme}, ${row.prefix_count_v4}, ${row.prefix_count_v6}, ${row.input_prefix_count}, ${row.dropped_prefix_count},
            ${db.json(row.modules as never)}, ${row.content}, ${row.parent_id ?? null}, ${row.chain_depth ?? 0}, ${row.chain_changes ?? 0},
            ${row.link_parent_id ?? null}, ${row.link_change ?? null})`;
}

/** The revisions outside `ids` whose content is a change against one of `ids` (a prune re-bases them). */
export async function listDependents(db: Db, tenantId: string, ids: number[]): Promise<number[]> {
  if (!ids.length) return [];
  const rows = await db<{ revision_id: number }[]>`
    SELECT revision_id FROM revisions
     WHERE tenant_id = ${tenantId} AND parent_id = ANY(${ids}::int[]) AND NOT revision_id = ANY(${ids}::int[])
     ORDER BY revision_id`;
  return rows.map((r) => r.revision_id);
}

/** Stores a revision's content whole (its parent may go): the chain starts again from it. */
export async function rewriteContentWhole(db: Db, tenantId: string, revisionId: number, content: Buffer): Promise<void> {
  await db`
    UPDATE revisions SET content = ${content}, parent_id = NULL, chain_depth = 0, chain_changes = 0
     WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId}`;
}

/**
 * A revision stored as a change against `parentId` rewritten whole, that change kept as its link
 * (what a content stored whole at its chain's bound keeps: migration 0030), and the revisions
 * stored on it since, down their chain, as many changes nearer a whole content as it was: their
 * depth and entries counted from it. One statement (every part sees the row as it was). False
 * when it is no longer stored against that parent (a prune rewrote it first) or is gone.
 */
export async function rewriteChangeWhole(db: Db, tenantId: string, revisionId: number, parentId: number, content: Buffer): Promise<boolean> {
  const [row] = await db<{ rewritten: number }[]>`
    WITH RECURSIVE was AS (
      SELECT chain_depth, chain_changes FROM revisions WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND parent_id = ${parentId}
    ), rewritten AS (
      UPDATE revisions SET content = ${content}, parent_id = NULL, chain_depth = 0, chain_changes = 0,
                           link_parent_id = parent_id, link_change = content
       WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND parent_id = ${parentId}
      RETURNING revision_id
    ), below AS (
      SELECT revision_id FROM revisions WHERE tenant_id = ${tenantId} AND parent_id = ${revisionId}
      UNION ALL
      SELECT r.revision_id FROM revisions r JOIN below b ON r.tenant_id = ${tenantId} AND r.parent_id = b.revision_id
    ), rebased AS (
      UPDATE revisions r SET chain_depth = GREATEST(r.chain_depth - was.chain_depth, 1), chain_changes = GREATEST(r.chain_changes - was.chain_changes, 0)
        FROM was, rewritten
       WHERE r.tenant_id = ${tenantId} AND r.revision_id IN (SELECT revision_id FROM below)
    )
    SELECT count(*)::int AS rewritten FROM rewritten`;
  return (row?.rewritten ?? 0) > 0;
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
