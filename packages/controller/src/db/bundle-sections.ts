import { randomUUID } from "node:crypto";
import { readByteSlice } from "./byte-slice.js";
import { type Db, withSavepoint } from "./connect.js";
import { isForeignKeyViolation } from "./pg-errors.js";
import type { Fragment } from "./tenant-table.js";

/** A stored prefix section (`rl-bundle/2`): full when `base_revision_id` is 0, else the edit script from that revision. */
export interface BundleSectionMeta {
  revision_id: number;
  base_revision_id: number;
  sha256: string;
  prefixes_sha256: string;
  base_prefixes_sha256: string | null;
  /** The page root (`rl-prefix-pages/1`) of the revision's full section; null in rows stored before migration 0026. */
  prefixes_pages_sha256: string | null;
  /** Plain bytes. */
  size: number;
  /** Plain bytes per sealed piece of `body`. */
  chunk: number;
  /**
   * A full section stored as the full section of revision `made_from` and the delta from it
   * (`body` not written yet: migration 0027); null when `body` holds it. `made_depth`: deltas
   * from a body stored whole (0 when this one is).
   */
  made_from: number | null;
  made_depth: number;
}

export async function findBundleSection(db: Db, tenantId: string, revisionId: number, baseRevisionId: number): Promise<BundleSectionMeta | undefined> {
  const [r] = await db<BundleSectionMeta[]>`
    SELECT revision_id, base_revision_id, sha256, prefixes_sha256, base_prefixes_sha256, prefixes_pages_sha256, size, chunk, made_from, made_depth
    FROM bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = ${baseRevisionId}`;
  return r;
}

/**
 * Bytes of a big body sent in one statement (migration 0028): the driver sends a bytea as hex
 * text, and the hex and its UTF-8 of 33 MB held the event loop 0.75 s (1–3 s under load); of
 * 1 MiB they take a few milliseconds, and the loop runs between two statements.
 */
export const BODY_PART_BYTES = 1024 * 1024;

/** A body of up to two parts goes in one statement: the parts would cost a round trip each for a stall of a few milliseconds. */
const inParts = (body: Buffer, partBytes: number) => body.length > 2 * partBytes;

/**
 * Stores a section once: a replica that built the same one meanwhile keeps its row (the bytes
 * are the same). `body` null for a full section stored as `made_from`'s and the delta from it.
 * A big body goes in parts (`partBytes` each; Infinity sends it whole) in one transaction (a
 * savepoint of the caller's): the row is seen by others only once its body is whole.
 */
export async function insertBundleSection(
  db: Db,
  tenantId: string,
  row: BundleSectionMeta & { body: Buffer | null },
  partBytes = BODY_PART_BYTES,
): Promise<void> {
  const { body } = row;
  const insert = (tx: Db, value: Buffer | Fragment | null) => tx`
    INSERT INTO bundle_sections (tenant_id, revision_id, base_revision_id, sha256, prefixes_sha256, base_prefixes_sha256, prefixes_pages_sha256, size, chunk, made_from, made_depth, body)
    VALUES (${tenantId}, ${row.revision_id}, ${row.base_revision_id}, ${row.sha256}, ${row.prefixes_sha256}, ${row.base_prefixes_sha256}, ${row.prefixes_pages_sha256}, ${row.size}, ${row.chunk}, ${row.made_from}, ${row.made_depth}, ${value})
    ON CONFLICT DO NOTHING RETURNING 1`;
  if (!body || !inParts(body, partBytes)) {
    await insert(db, body);
    return;
  }
  await withSavepoint(db, async (tx) => {
    // An empty body until the parts are put together, in this transaction: no one else sees it.
    if (!(await insert(tx, tx`''::bytea`)).length) return;
    const section = sectionRow(tx, tenantId, row.revision_id, row.base_revision_id);
    const written = await writeParts(tx, tenantId, row, body, partBytes);
    if (!(await assembleParts(tx, section, written, body.length, tx``)))
      throw new Error(`the prefix section of revision ${row.revision_id} was not put together from its parts`);
  });
}

/**
 * Writes the body of a full section stored as its base's and a delta (the same bytes, sealed in
 * pieces of `chunk`); false when it was written already or is gone. A big body goes in parts
 * (outside any transaction: on the embedded database's one connection other queries run between
 * them) and one statement then puts them together: readers see no body or the whole one.
 */
export async function writeBundleSectionBody(
  db: Db,
  tenantId: string,
  revisionId: number,
  sha256: string,
  body: Buffer,
  partBytes = BODY_PART_BYTES,
): Promise<boolean> {
  const section = sectionRow(db, tenantId, revisionId, 0);
  const unwritten = db`AND sha256 = ${sha256} AND body IS NULL`;
  if (!inParts(body, partBytes)) {
    const rows = await db`UPDATE bundle_sections SET body = ${body}, made_from = NULL, made_depth = 0 WHERE ${section} ${unwritten}`;
    return rows.count > 0;
  }
  if (!(await db`SELECT 1 FROM bundle_sections WHERE ${section} ${unwritten}`).length) return false;
  // What a write that stopped midway left (its process ended) goes first.
  await db`DELETE FROM bundle_section_parts WHERE ${section}`;
  try {
    const written = await writeParts(db, tenantId, { revision_id: revisionId, base_revision_id: 0 }, body, partBytes);
    if (!(await assembleParts(db, section, written, body.length, unwritten))) return false;
    // The body is there: what another write of it left is of no use.
    await db`DELETE FROM bundle_section_parts WHERE ${section}`;
    return true;
  } catch (err) {
    // A prune took the section meanwhile (its parts went with it).
    if (isForeignKeyViolation(err)) return false;
    throw err;
  }
}

/** `WHERE` of one section's row, in bundle_sections or its parts. */
const sectionRow = (db: Db, tenantId: string, revisionId: number, baseRevisionId: number): Fragment =>
  db`tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = ${baseRevisionId}`;

/** One write's parts: named by a writer of its own, so two replicas writing the same section (sealed apart, so not the same bytes) never mix theirs. */
async function writeParts(
  db: Db,
  tenantId: string,
  row: { revision_id: number; base_revision_id: number },
  body: Buffer,
  partBytes: number,
): Promise<{ writer: string; parts: number }> {
  const writer = randomUUID();
  let part = 0;
  for (let at = 0; at < body.length; at += partBytes, part++)
    await db`
      INSERT INTO bundle_section_parts (tenant_id, revision_id, base_revision_id, writer, part, bytes)
      VALUES (${tenantId}, ${row.revision_id}, ${row.base_revision_id}, ${writer}, ${part}, ${body.subarray(at, at + partBytes)})`;
  return { writer, parts: part };
}

/**
 * Puts one write's parts together as the section's body and deletes them, in one statement; the
 * body is set only when all that write's parts are there (another write of the same section may
 * have deleted them first) and `where` (`AND …`) holds. Only its own parts: deleting another
 * write's under way could leave both unable to finish, and the body unwritten.
 */
async function assembleParts(db: Db, section: Fragment, written: { writer: string; parts: number }, length: number, where: Fragment): Promise<boolean> {
  const rows = await db`
    WITH parts AS (DELETE FROM bundle_section_parts WHERE ${section} AND writer = ${written.writer} RETURNING part, bytes),
      whole AS (SELECT string_agg(bytes, ''::bytea ORDER BY part) AS bytes, count(*) AS parts FROM parts)
    UPDATE bundle_sections SET body = whole.bytes, made_from = NULL, made_depth = 0
    FROM whole WHERE ${section} ${where} AND whole.parts = ${written.parts} AND length(whole.bytes) = ${length}`;
  return rows.count > 0;
}

/** `length` stored (sealed) bytes of a section from `offset`; the database clips a run past the end. */
export function readBundleSectionSlice(db: Db, tenantId: string, revisionId: number, baseRevisionId: number, offset: number, length: number) {
  const section = db`bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = ${baseRevisionId}`;
  return readByteSlice(db, "body", section, offset, length);
}
