import { diffPrefixLines, encodePrefixLines, type PrefixColumn, prefixLines, sha256Hex } from "@rlc/shared/bundle";
import { type BundleSectionMeta, findBundleSection, insertBundleSection, readBundleSectionSlice } from "../../db/bundle-sections.js";
import type { Db } from "../../db/connect.js";
import { ENVELOPE_CHUNK_BYTES, openPieces, sealEnvelope } from "../../lib/sealed-envelope.js";
import type { SecretBox } from "../../lib/secret-box.js";
import type { RevisionFamily } from "../revisions/revision-content.js";
import type { RevisionStore } from "../revisions/revision-store.js";

/*
 * The prefix sections of `rl-bundle/2`, built once per revision (and per base for a delta) and
 * kept in the database, so every replica and every speaker of the revision uses the same bytes:
 * an apply to 200 speakers encodes and hashes the prefixes once, and each speaker's own part is
 * a signature over a few hundred bytes.
 */

export interface SectionDeps {
  revisions: RevisionStore;
  secretBox: SecretBox;
  sealChunkBytes?: number;
}

const column = (f: RevisionFamily): PrefixColumn => ({ length: f.length, prefixAt: (i) => f.prefixes[i]!, communitiesAt: (i) => f.tagAt(i).communities });

async function linesOf(db: Db, deps: SectionDeps, tenantId: string, revisionId: number): Promise<string[] | null> {
  const content = await deps.revisions.content(db, tenantId, revisionId);
  return content ? prefixLines(column(content.v4), column(content.v6)) : null;
}

async function store(
  db: Db,
  deps: SectionDeps,
  tenantId: string,
  meta: Omit<BundleSectionMeta, "chunk" | "sha256" | "size">,
  body: Buffer,
): Promise<BundleSectionMeta> {
  const chunk = deps.sealChunkBytes ?? ENVELOPE_CHUNK_BYTES;
  const row = { ...meta, sha256: sha256Hex(body), size: body.length, chunk };
  await insertBundleSection(db, tenantId, { ...row, body: await sealEnvelope(deps.secretBox, body, chunk) });
  // Another replica may have stored the same section first: its row is the one to stream.
  return (await findBundleSection(db, tenantId, meta.revision_id, meta.base_revision_id)) ?? row;
}

/** The revision's full prefix section, built and stored on first use; undefined when the revision is gone. */
export async function ensureFullSection(db: Db, deps: SectionDeps, tenantId: string, revisionId: number): Promise<BundleSectionMeta | undefined> {
  const found = await findBundleSection(db, tenantId, revisionId, 0);
  if (found) return found;
  const lines = await linesOf(db, deps, tenantId, revisionId);
  if (!lines) return undefined;
  const body = encodePrefixLines(lines);
  const sha256 = sha256Hex(body);
  return store(db, deps, tenantId, { revision_id: revisionId, base_revision_id: 0, prefixes_sha256: sha256, base_prefixes_sha256: null }, body);
}

/**
 * The edit script from `baseRevisionId`'s section to `revisionId`'s, built and stored on first
 * use; null when the base is gone or the delta would not be smaller than half the full section
 * (the agent then gets the full bundle, which it can apply without a base).
 */
export async function ensureDeltaSection(
  db: Db,
  deps: SectionDeps,
  tenantId: string,
  baseRevisionId: number,
  full: BundleSectionMeta,
): Promise<BundleSectionMeta | null> {
  const found = await findBundleSection(db, tenantId, full.revision_id, baseRevisionId);
  if (found) return found;
  const base = await ensureFullSection(db, deps, tenantId, baseRevisionId);
  const baseLines = base ? await linesOf(db, deps, tenantId, baseRevisionId) : null;
  const lines = await linesOf(db, deps, tenantId, full.revision_id);
  if (!base || !baseLines || !lines) return null;
  const body = diffPrefixLines(baseLines, lines);
  if (body.length > full.size / 2) return null;
  return store(
    db,
    deps,
    tenantId,
    { revision_id: full.revision_id, base_revision_id: baseRevisionId, prefixes_sha256: full.prefixes_sha256, base_prefixes_sha256: base.prefixes_sha256 },
    body,
  );
}

/** The plain bytes of a stored section (the local speaker applies its bundle at once). */
export async function openFullSection(db: Db, deps: SectionDeps, tenantId: string, section: BundleSectionMeta): Promise<Buffer> {
  const sealed = await readBundleSectionSlice(db, tenantId, section.revision_id, section.base_revision_id, 0, 2 ** 31 - 1);
  if (!sealed) throw new Error(`the prefix section of revision ${section.revision_id} is gone`);
  return openPieces(deps.secretBox, sealed, section.chunk);
}
