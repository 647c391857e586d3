import { readByteSlice } from "./byte-slice.js";
import type { Db } from "./connect.js";

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
 * Stores a section once: a replica that built the same one meanwhile keeps its row (the bytes
 * are the same). `body` null for a full section stored as `made_from`'s and the delta from it.
 */
export async function insertBundleSection(db: Db, tenantId: string, row: BundleSectionMeta & { body: Buffer | null }): Promise<void> {
  await db`
    INSERT INTO bundle_sections (tenant_id, revision_id, base_revision_id, sha256, prefixes_sha256, base_prefixes_sha256, prefixes_pages_sha256, size, chunk, made_from, made_depth, body)
    VALUES (${tenantId}, ${row.revision_id}, ${row.base_revision_id}, ${row.sha256}, ${row.prefixes_sha256}, ${row.base_prefixes_sha256}, ${row.prefixes_pages_sha256}, ${row.size}, ${row.chunk}, ${row.made_from}, ${row.made_depth}, ${row.body})
    ON CONFLICT DO NOTHING`;
}

/** Writes the body of a full section stored as its base's and a delta (the same bytes, sealed in pieces of `chunk`); false when it was written already or is gone. */
export async function writeBundleSectionBody(db: Db, tenantId: string, revisionId: number, sha256: string, body: Buffer): Promise<boolean> {
  const rows = await db`
    UPDATE bundle_sections SET body = ${body}, made_from = NULL, made_depth = 0
    WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = 0 AND sha256 = ${sha256} AND body IS NULL`;
  return rows.count > 0;
}

/** `length` stored (sealed) bytes of a section from `offset`; the database clips a run past the end. */
export function readBundleSectionSlice(db: Db, tenantId: string, revisionId: number, baseRevisionId: number, offset: number, length: number) {
  const section = db`bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = ${baseRevisionId}`;
  return readByteSlice(db, "body", section, offset, length);
}
