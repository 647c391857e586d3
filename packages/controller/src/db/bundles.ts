import type { Db } from "./connect.js";

export interface BundleRow {
  tenant_id: string;
  speaker_id: string;
  revision_id: number;
  sequence: string;
  digest: string;
  issued_at: Date;
  expires_at: Date;
  envelope: Buffer;
}

export async function upsertBundle(db: Db, row: Omit<BundleRow, "sequence"> & { sequence: number }): Promise<void> {
  await db`
    INSERT INTO bundles (tenant_id, speaker_id, revision_id, sequence, digest, issued_at, expires_at, envelope)
    VALUES (${row.tenant_id}, ${row.speaker_id}, ${row.revision_id}, ${row.sequence}, ${row.digest}, ${row.issued_at}, ${row.expires_at}, ${row.envelope})
    ON CONFLICT (speaker_id, revision_id) DO UPDATE SET sequence = EXCLUDED.sequence, digest = EXCLUDED.digest,
      issued_at = EXCLUDED.issued_at, expires_at = EXCLUDED.expires_at, envelope = EXCLUDED.envelope`;
}

export async function findBundle(db: Db, speakerId: string, revisionId: number): Promise<BundleRow | undefined> {
  const [r] = await db<BundleRow[]>`SELECT * FROM bundles WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId}`;
  return r;
}

/** Bundles of desired revisions that expire before `before`: the scheduler re-issues them. */
export async function listBundlesExpiringBefore(db: Db, before: Date): Promise<{ tenant_id: string; speaker_id: string; revision_id: number }[]> {
  return db<{ tenant_id: string; speaker_id: string; revision_id: number }[]>`
    SELECT b.tenant_id, b.speaker_id, b.revision_id FROM bundles b JOIN speakers s ON s.id = b.speaker_id AND s.desired_revision_id = b.revision_id
    WHERE b.expires_at < ${before}`;
}

/** What names a bundle, without its body: the desired-revision answers and Watch need no more. */
export interface BundleMeta {
  revision_id: number;
  sequence: string;
  digest: string;
  issued_at: Date;
  /** Bytes of the stored envelope. */
  size: number;
  /** Hex SHA-256 of the stored envelope; only when asked for (it reads the body, in the database). */
  sha256: string | null;
}

export async function findBundleMeta(db: Db, speakerId: string, revisionId: number, opts: { sha256?: boolean } = {}): Promise<BundleMeta | undefined> {
  const [r] = await db<BundleMeta[]>`
    SELECT revision_id, sequence, digest, issued_at, octet_length(envelope)::int AS size,
      ${opts.sha256 ? db`encode(sha256(envelope), 'hex')` : db`NULL::text`} AS sha256
    FROM bundles WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId}`;
  return r;
}

/**
 * `length` bytes of the stored envelope from `offset`, only while it is still the issue of
 * `sequence` (a re-issue in between answers nothing: the reader must not splice two issues).
 */
export async function readBundleSlice(db: Db, speakerId: string, revisionId: number, sequence: string, offset: number, length: number): Promise<Buffer | undefined> {
  const [r] = await db<{ data: Uint8Array }[]>`
    SELECT substring(envelope FROM ${offset + 1} FOR ${length}) AS data
    FROM bundles WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId} AND sequence = ${sequence}`;
  // The embedded database answers bytea as a plain Uint8Array.
  return r ? Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength) : undefined;
}
