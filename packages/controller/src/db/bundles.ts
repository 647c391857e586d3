import { readByteSlice } from "./byte-slice.js";
import type { Db } from "./connect.js";

export interface BundleRow {
  tenant_id: string;
  speaker_id: string;
  revision_id: number;
  sequence: string;
  digest: string;
  issued_at: Date;
  expires_at: Date;
  /** The signed envelope; when `envelope_sealed`, sealed in pieces of `envelope_chunk` plain bytes. */
  envelope: Buffer;
  envelope_sealed: boolean;
  envelope_chunk: number | null;
  /** Bytes and hex SHA-256 of the plain envelope (sealed rows only: plain rows are their own). */
  envelope_size: number | null;
  envelope_sha256: string | null;
  /** 1: `envelope` is the whole signed JSON envelope; 2: the head of an `rl-bundle/2`, its section stored apart. */
  format: number;
  /** Format 2: the sealed head of the delta from this revision, when one was issued. */
  delta_base_revision_id: number | null;
  delta_head: Buffer | null;
}

export type BundleWrite = Omit<BundleRow, "sequence"> & { sequence: number };

const BUNDLE_COLUMNS = [
  "tenant_id",
  "speaker_id",
  "revision_id",
  "sequence",
  "digest",
  "issued_at",
  "expires_at",
  "envelope",
  "envelope_sealed",
  "envelope_chunk",
  "envelope_size",
  "envelope_sha256",
  "format",
  "delta_base_revision_id",
  "delta_head",
] as const satisfies readonly (keyof BundleWrite)[];

export async function upsertBundle(db: Db, row: BundleWrite): Promise<void> {
  await upsertBundles(db, [row]);
}

/** Several speakers' bundles in one statement (an apply stores a batch of them at once). */
export async function upsertBundles(db: Db, rows: BundleWrite[]): Promise<void> {
  if (!rows.length) return;
  await db`
    INSERT INTO bundles ${db(rows, [...BUNDLE_COLUMNS])}
    ON CONFLICT (speaker_id, revision_id) DO UPDATE SET sequence = EXCLUDED.sequence, digest = EXCLUDED.digest,
      issued_at = EXCLUDED.issued_at, expires_at = EXCLUDED.expires_at, envelope = EXCLUDED.envelope,
      envelope_sealed = EXCLUDED.envelope_sealed, envelope_chunk = EXCLUDED.envelope_chunk,
      envelope_size = EXCLUDED.envelope_size, envelope_sha256 = EXCLUDED.envelope_sha256, format = EXCLUDED.format,
      delta_base_revision_id = EXCLUDED.delta_base_revision_id, delta_head = EXCLUDED.delta_head`;
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
  /** Bytes of the plain envelope (what the agent receives). */
  size: number;
  /** Hex SHA-256 of the plain envelope; for a plain row only when asked for (it reads the body, in the database). */
  sha256: string | null;
}

export async function findBundleMeta(db: Db, speakerId: string, revisionId: number, opts: { sha256?: boolean } = {}): Promise<BundleMeta | undefined> {
  const [r] = await db<BundleMeta[]>`
    SELECT revision_id, sequence, digest, issued_at,
      CASE WHEN envelope_sealed THEN envelope_size ELSE octet_length(envelope)::int END AS size,
      CASE WHEN envelope_sealed THEN envelope_sha256 ELSE ${opts.sha256 ? db`encode(sha256(envelope), 'hex')` : db`NULL::text`} END AS sha256
    FROM bundles WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId}`;
  return r;
}

/**
 * What streaming a bundle needs, in one read: the issue, how it is stored and, for format 2,
 * the sealed head (full or delta, as `base` asks; a few KiB) and the section it is followed by.
 */
export interface BundleLayout {
  sequence: string;
  format: number;
  /** Format 1: the plain size of the sealed pieces (null when stored plain); format 2: of the head's. */
  chunk: number | null;
  /** Format 1: plain size and SHA-256 of the envelope. */
  size: number;
  sha256: string | null;
  /** Format 2: the sealed head to send, and which section follows it (0 = the full one). */
  head: Buffer | null;
  section_base_revision_id: number;
  /** Format 2: that section's plain SHA-256, size and sealed piece size; null when the section is gone. */
  section_sha256: string | null;
  section_size: number | null;
  section_chunk: number | null;
  /** Format 2, a full section stored as its base's and a delta (migration 0027): that base's revision, and how many deltas from a body stored whole; null and 0 otherwise. */
  section_made_from: number | null;
  section_made_depth: number | null;
}

/** The layout of the tenant's bundle, with its section's, in one query (an apply's fetches arrive a thousand at once). */
export async function findBundleLayout(
  db: Db,
  tenantId: string,
  speakerId: string,
  revisionId: number,
  baseRevisionId: number | null,
): Promise<BundleLayout | undefined> {
  const delta = baseRevisionId !== null && baseRevisionId > 0;
  const [r] = await db<BundleLayout[]>`
    SELECT l.*, s.sha256 AS section_sha256, s.size AS section_size, s.chunk AS section_chunk, s.made_from AS section_made_from, s.made_depth AS section_made_depth
    FROM (
      SELECT tenant_id, revision_id, sequence, format, CASE WHEN envelope_sealed THEN envelope_chunk END AS chunk,
        CASE WHEN envelope_sealed THEN envelope_size ELSE octet_length(envelope)::int END AS size,
        CASE WHEN envelope_sealed THEN envelope_sha256 WHEN format = 1 THEN encode(sha256(envelope), 'hex') END AS sha256,
        CASE WHEN format <> 2 THEN NULL WHEN ${delta} AND delta_base_revision_id = ${baseRevisionId ?? 0} THEN delta_head ELSE envelope END AS head,
        CASE WHEN format = 2 AND ${delta} AND delta_base_revision_id = ${baseRevisionId ?? 0} THEN delta_base_revision_id ELSE 0 END AS section_base_revision_id
      FROM bundles WHERE tenant_id = ${tenantId} AND speaker_id = ${speakerId} AND revision_id = ${revisionId}
    ) l
    LEFT JOIN bundle_sections s ON l.format = 2 AND s.tenant_id = l.tenant_id AND s.revision_id = l.revision_id AND s.base_revision_id = l.section_base_revision_id`;
  if (r?.head) r.head = Buffer.from(r.head.buffer, r.head.byteOffset, r.head.byteLength);
  return r;
}

/**
 * `length` bytes of the stored envelope (sealed or not, as stored) from `offset`, only while it is still the issue of
 * `sequence` (a re-issue in between answers nothing: the reader must not splice two issues).
 */
export function readBundleSlice(db: Db, speakerId: string, revisionId: number, sequence: string, offset: number, length: number) {
  const issue = db`bundles WHERE speaker_id = ${speakerId} AND revision_id = ${revisionId} AND sequence = ${sequence}`;
  return readByteSlice(db, "envelope", issue, offset, length);
}
