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
}

export async function findBundleSection(db: Db, tenantId: string, revisionId: number, baseRevisionId: number): Promise<BundleSectionMeta | undefined> {
  const [r] = await db<BundleSectionMeta[]>`
    SELECT revision_id, base_revision_id, sha256, prefixes_sha256, base_prefixes_sha256, prefixes_pages_sha256, size, chunk
    FROM bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = ${baseRevisionId}`;
  return r;
}

/** Stores a section once: a replica that built the same one meanwhile keeps its row (the bytes are the same). */
export async function insertBundleSection(db: Db, tenantId: string, row: BundleSectionMeta & { body: Buffer }): Promise<void> {
  await db`
    INSERT INTO bundle_sections (tenant_id, revision_id, base_revision_id, sha256, prefixes_sha256, base_prefixes_sha256, prefixes_pages_sha256, size, chunk, body)
    VALUES (${tenantId}, ${row.revision_id}, ${row.base_revision_id}, ${row.sha256}, ${row.prefixes_sha256}, ${row.base_prefixes_sha256}, ${row.prefixes_pages_sha256}, ${row.size}, ${row.chunk}, ${row.body})
    ON CONFLICT DO NOTHING`;
}

/** `length` stored (sealed) bytes of a section from `offset`; the database clips a run past the end. */
export function readBundleSectionSlice(db: Db, tenantId: string, revisionId: number, baseRevisionId: number, offset: number, length: number) {
  const section = db`bundle_sections WHERE tenant_id = ${tenantId} AND revision_id = ${revisionId} AND base_revision_id = ${baseRevisionId}`;
  return readByteSlice(db, "body", section, offset, length);
}
