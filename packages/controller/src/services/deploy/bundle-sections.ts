import {
  applyPrefixDeltaBytes,
  diffPrefixColumns,
  diffPrefixSplices,
  encodePrefixColumns,
  type LineSplice,
  PREFIX_SECTION_FORMAT,
  type PrefixColumn,
  type PrefixColumns,
  pagesOf,
  sha256Hex,
} from "@rlc/shared/bundle";
import { writePrefixLines } from "@rlc/shared/prefix";
import { type BundleSectionMeta, findBundleSection, insertBundleSection, readBundleSectionSlice, writeBundleSectionBody } from "../../db/bundle-sections.js";
import type { Db, Sql } from "../../db/connect.js";
import { listAllSpeakers } from "../../db/speakers.js";
import { ENVELOPE_CHUNK_BYTES, openPieces, sealEnvelope } from "../../lib/sealed-envelope.js";
import type { SecretBox } from "../../lib/secret-box.js";
import { contentSplices } from "../revisions/revision-align.js";
import type { RevisionSplices } from "../revisions/revision-commit.js";
import type { RevisionContent, RevisionFamily } from "../revisions/revision-content.js";
import type { RevisionStore } from "../revisions/revision-store.js";
import { type SectionCache, sectionKey } from "./section-cache.js";
import { applyDeltaColumns, columnsOf, columnsSize, type SectionColumns, type SectionColumnsCache } from "./section-columns.js";

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
  /** Bytes of a big sealed body sent a statement at a time (BODY_PART_BYTES; Infinity sends it in one). */
  bodyPartBytes?: number;
  /** Where this process keeps the opened sections it serves: a section built here goes in as it is stored. */
  sections?: SectionCache;
  /** Full sections kept in columns, to make the next revision's of (section-columns.ts); without it each is read again. */
  columns?: SectionColumnsCache;
  /** The pool: a full section stored as its base's and a delta gets its body written on it after the commit. */
  sql?: Sql;
  /** Milliseconds from the commit to that write (settleLater; default SECTION_BODY_DELAY_MS). */
  bodyDelayMs?: number;
}

/** How long after the commit what follows a revision's sections runs (settleLater): once the apply's agents have fetched their deltas. */
export const SECTION_BODY_DELAY_MS = 5000;

const column = (f: RevisionFamily): PrefixColumn => ({ length: f.length, prefixAt: (i) => f.prefixAt(i), communitiesAt: (i) => f.tagAt(i).communities });
const columns = (c: RevisionContent): PrefixColumns => ({ v4: column(c.v4), v6: column(c.v6) });

/** What opening a stored section reads of its row. */
export type StoredSection = Pick<BundleSectionMeta, "revision_id" | "base_revision_id" | "sha256" | "size" | "chunk" | "made_from" | "made_depth">;

type NewSection = Omit<BundleSectionMeta, "chunk" | "size" | "made_from" | "made_depth">;

/**
 * Seals and stores a section whose hash the caller has (a full section's is its prefixes_sha256
 * too); `made` stores a full section as its base's and the delta from it, its body not written.
 */
async function store(
  db: Db,
  deps: SectionDeps,
  tenantId: string,
  meta: NewSection,
  body: Buffer,
  made: { from: number; depth: number } | null = null,
): Promise<BundleSectionMeta> {
  const chunk = deps.sealChunkBytes ?? ENVELOPE_CHUNK_BYTES;
  const row = { ...meta, size: body.length, chunk, made_from: made?.from ?? null, made_depth: made?.depth ?? 0 };
  await insertBundleSection(db, tenantId, { ...row, body: made ? null : await sealEnvelope(deps.secretBox, body, chunk) }, deps.bodyPartBytes);
  // Named by its SHA-256: kept even if the transaction storing it rolls back, it is never wrong.
  deps.sections?.put(sectionKey(tenantId, meta), body);
  // Another replica may have stored the same section first: its row is the one to stream.
  return (await findBundleSection(db, tenantId, meta.revision_id, meta.base_revision_id)) ?? row;
}

/** Section builds under way in this process, per controller (its revision store) and section. */
const building = new WeakMap<RevisionStore, Map<string, Promise<unknown>>>();

/**
 * Runs a section's build once in this process when the caller is on the pool: a caller that
 * comes while the same section is being built (two applies of a revision whose refresh could
 * not build it, or a delta two applies need) waits for that build instead of encoding, sealing and storing
 * the same bytes a second time beside it. A caller inside a transaction builds on its own: a
 * build on the pool may need the connection that transaction holds (the embedded database has
 * one), so waiting for it there could never end.
 */
function once<T>(db: Db, deps: SectionDeps, key: string, build: () => Promise<T>): Promise<T> {
  if ("savepoint" in db) return build();
  let running = building.get(deps.revisions);
  if (!running) building.set(deps.revisions, (running = new Map()));
  const under = running.get(key) as Promise<T> | undefined;
  if (under) return under;
  const started = build().finally(() => running.delete(key));
  running.set(key, started);
  return started;
}

/**
 * The revision's full prefix section, built and stored on first use; undefined when the revision
 * is gone. Written from the revision's columns straight into bytes and hashed once; or, given a
 * `base` revision whose full section is stored, made from that section (kept in columns) and the
 * delta between the two (fromBase), the delta stored beside it, and itself stored as the base's
 * and that delta (its body written after the commit: settleLater) while the chain of such
 * sections is within the revision storage's policy.
 */
export function ensureFullSection(
  db: Db,
  deps: SectionDeps,
  tenantId: string,
  revisionId: number,
  base?: number,
  splices?: RevisionSplices,
): Promise<BundleSectionMeta | undefined> {
  return once(db, deps, `${tenantId}/${revisionId}/0`, async () => {
    const found = await findBundleSection(db, tenantId, revisionId, 0);
    if (found) return found;
    const content = await deps.revisions.content(db, tenantId, revisionId);
    if (!content) return undefined;
    const made = base === undefined ? null : await fromBase(db, deps, tenantId, base, content, splices);
    // The page root beside the SHA-256: what lets an agent check a delta by the pages it touched.
    const fullMeta = (sha256: string, root: string): NewSection => ({
      revision_id: revisionId,
      base_revision_id: 0,
      sha256,
      prefixes_sha256: sha256,
      base_prefixes_sha256: null,
      prefixes_pages_sha256: root,
    });
    if (!made) {
      const body = fullSection(content);
      const full = await store(db, deps, tenantId, fullMeta(sha256Hex(body), pagesOf(body).root), body);
      // Built on the pool (an apply's): settled from here; in a refresh's transaction, once it commits (prepareSections).
      if (!("savepoint" in db)) settleLater(deps, tenantId, full);
      return full;
    }
    const { section, pages } = made.columns;
    const meta = fullMeta(sha256Hex(section.bytes), pages.root);
    const depth = made.base.made_depth + 1;
    const full = await store(db, deps, tenantId, meta, section.bytes, depth <= deps.revisions.policy.maxDepth ? { from: made.base.revision_id, depth } : null);
    deps.columns?.put(sectionKey(tenantId, full), made.columns, columnsSize(full.size, section.count));
    await storeDelta(db, deps, tenantId, made.base, full, made.delta);
    return full;
  });
}

/**
 * A revision's full section as the edit script from a base's makes it of the base's section in
 * columns: a copy of the base's runs of kept lines and the script's added ones, only the pages
 * they touched hashed (the agent's own way). Null when the base's section is not stored, its
 * content is gone, or the delta is not small (not smaller than half the base's section).
 */
async function fromBase(
  db: Db,
  deps: SectionDeps,
  tenantId: string,
  baseRevisionId: number,
  content: RevisionContent,
  splices?: RevisionSplices,
): Promise<{ columns: SectionColumns; delta: Buffer; base: BundleSectionMeta } | null> {
  const base = await findBundleSection(db, tenantId, baseRevisionId, 0);
  if (!base) return null;
  const baseContent = await deps.revisions.content(db, tenantId, baseRevisionId);
  if (!baseContent) return null;
  // Made of the base's content by an incremental build: only its spliced ranges are walked.
  const delta = sectionDelta(baseContent, content, splices?.parentId === baseRevisionId ? splices : undefined);
  if (delta.length > base.size / 2) return null;
  const make = async () => columnsOf(await openSection(db, deps, tenantId, base));
  // Counted at the plain size here: the lines are not known before the section is read.
  const kept = deps.columns ? await deps.columns.get(sectionKey(tenantId, base), columnsSize(base.size, 0), make) : await make();
  return { columns: applyDeltaColumns(kept, delta, deps.columns?.takeRoom(tenantId) ?? null), delta, base };
}

/**
 * The full prefix section of `content`: written from its parsed prefixes where it has them
 * (writePrefixLines, each line's tail the bytes of its tag's communities), no string made a
 * prefix, which a compact content (RevisionFamily) would otherwise write one by one; else from
 * its texts. The same bytes either way (section-of-content.test.ts).
 */
export function fullSection(content: RevisionContent): Buffer {
  const { v4, v6 } = content;
  const t4 = v4.table;
  const t6 = v6.table;
  if (!t4 || !t6 || t4.count !== v4.length || t6.count !== v6.length) return encodePrefixColumns(column(v4), column(v6));
  const tails = content.tags.map((t) => Buffer.from(`\t${t.communities.join(",")}\n`, "utf8"));
  return Buffer.concat([SECTION_HEAD, writePrefixLines(t4, v4.tags, tails).bytes, writePrefixLines(t6, v6.tags, tails).bytes]);
}

const SECTION_HEAD = Buffer.from(`${PREFIX_SECTION_FORMAT}\n`, "latin1");

/**
 * The delta script from `base`'s section to `content`'s: walked only over where they differ,
 * as the build that made `content` from `base` names it (`splices`), or as their alignment by
 * parsed prefixes finds it (contentSplices), else over every line.
 */
export function sectionDelta(base: RevisionContent, content: RevisionContent, splices?: Omit<RevisionSplices, "parentId">): Buffer {
  const where = splices ?? contentSplices(base, content);
  if (!where) return diffPrefixColumns(columns(base), columns(content));
  return diffPrefixSplices(columns(base), columns(content), lineSplices(where, base.v4.length, content.v4.length));
}

/** A build's splices per family as splices of the section's lines (IPv4's, then IPv6's after them). */
function lineSplices(splices: Omit<RevisionSplices, "parentId">, baseV4: number, nextV4: number): LineSplice[] {
  const v6 = splices.v6.map((s) => ({ from: s.from + baseV4, to: s.to + baseV4, at: s.at + nextV4, count: s.count }));
  return [...splices.v4, ...v6];
}

/** Stores the delta section from `base` to `full` (both stored full sections). */
function storeDelta(db: Db, deps: SectionDeps, tenantId: string, base: BundleSectionMeta, full: BundleSectionMeta, body: Buffer): Promise<BundleSectionMeta> {
  return store(
    db,
    deps,
    tenantId,
    {
      revision_id: full.revision_id,
      base_revision_id: base.revision_id,
      sha256: sha256Hex(body),
      prefixes_sha256: full.prefixes_sha256,
      base_prefixes_sha256: base.prefixes_sha256,
      prefixes_pages_sha256: full.prefixes_pages_sha256,
    },
    body,
  );
}

/**
 * Pairs of contents (new, base: their prefix digests) whose delta came out larger than half the
 * full section, per controller: such a delta is not stored, and without this every apply to a
 * speaker on that base would walk both revisions again to find the same (a second for 500k).
 * Named by content, so a revision id made again after a rolled-back refresh is not mistaken.
 */
const tooLarge = new WeakMap<RevisionStore, Set<string>>();
const TOO_LARGE_KEPT = 4096;

/**
 * The edit script from `baseRevisionId`'s section to `revisionId`'s, built and stored on first
 * use; null when the base is gone or the delta would not be smaller than half the full section
 * (the agent then gets the full bundle, which it can apply without a base). Made from the two
 * revisions' contents by one walk over them: only the added lines are ever written as text.
 */
export function ensureDeltaSection(
  db: Db,
  deps: SectionDeps,
  tenantId: string,
  baseRevisionId: number,
  full: BundleSectionMeta,
): Promise<BundleSectionMeta | null> {
  return once(db, deps, `${tenantId}/${full.revision_id}/${baseRevisionId}`, async () => {
    const found = await findBundleSection(db, tenantId, full.revision_id, baseRevisionId);
    if (found) return found;
    const base = await ensureFullSection(db, deps, tenantId, baseRevisionId);
    if (!base) return null;
    let known = tooLarge.get(deps.revisions);
    if (!known) tooLarge.set(deps.revisions, (known = new Set()));
    const pair = `${full.prefixes_sha256}/${base.prefixes_sha256}`;
    if (known.has(pair)) return null;
    const baseContent = await deps.revisions.content(db, tenantId, baseRevisionId);
    const content = await deps.revisions.content(db, tenantId, full.revision_id);
    if (!baseContent || !content) return null;
    const body = sectionDelta(baseContent, content);
    if (body.length > full.size / 2) {
      if (known.size >= TOO_LARGE_KEPT) known.clear();
      known.add(pair);
      return null;
    }
    return storeDelta(db, deps, tenantId, base, full, body);
  });
}

/** Deltas built ahead for a new revision: from this many of the revisions its speakers run, at most. */
const PREPARED_BASES = 4;

/**
 * Builds, when a refresh makes a revision, the sections an apply of it will ask for: its full
 * section and the deltas from the revisions the tenant's speakers run now (the one before it,
 * usually). The refresh runs this in the transaction that commits the revision, so they commit
 * with it and an apply finds them stored instead of building them on its own path. Answers what
 * to run once that transaction has committed (settleLater).
 */
export async function prepareSections(
  db: Db,
  deps: SectionDeps,
  tenantId: string,
  revisionId: number,
  splices?: RevisionSplices,
): Promise<(() => void) | undefined> {
  const speakers = await listAllSpeakers(db, tenantId);
  // No speaker, no apply to prepare for: the section waits for one (12 MiB a revision kept for nothing).
  if (!speakers.length) return undefined;
  const running = new Set<number>();
  for (const s of speakers) if (s.applied_revision_id !== null && s.applied_revision_id !== revisionId) running.add(s.applied_revision_id);
  // The newest bases first: the speakers that lag furthest are the fewest, and their deltas the largest.
  const bases = [...running].sort((a, b) => b - a).slice(0, PREPARED_BASES);
  // The full section made from the newest base's and the delta to it (which is then stored too).
  const full = await ensureFullSection(db, deps, tenantId, revisionId, bases[0], splices);
  if (!full) return undefined;
  for (const base of bases) await ensureDeltaSection(db, deps, tenantId, base, full);
  return () => settleLater(deps, tenantId, full);
}

/**
 * What follows a new revision's sections on the pool, a few seconds after the commit (the apply's
 * agents fetch their deltas meanwhile, and 33 MB of a 1.2M-prefix section sealed and sent would
 * hold the event loop they are served from): the body of a full section stored as its base's and
 * a delta written; the section kept in columns, and room made for the next one
 * (section-columns.ts), so the next refresh neither reads it back nor allocates a section.
 * The body goes ~1 MiB a statement and is put together in the database (writeBundleSectionBody):
 * sent in one, its hex held the loop 0.75 s. Until it is written any replica opens the section
 * from its base's (openSection); should this process stop first, the chain is bounded
 * (made_depth) and the next full section past the bound is written whole.
 */
export function settleLater(deps: SectionDeps, tenantId: string, full: BundleSectionMeta): void {
  const pool = deps.sql;
  if (!pool) return;
  // Where the section is kept in columns (made from its base's here), the room for the next one
  // is made now, not with the body: an operator's next refresh often comes within those seconds,
  // and one that found no room allocated its section beside the body's sealing and writing (its
  // sections 1.4 s, against 0.2-0.3 s with the room there: refresh-agents.mjs, 6 s apart).
  const columns = deps.columns;
  void columns
    ?.peek(sectionKey(tenantId, full))
    ?.then((kept) => columns.prepareRoom(tenantId, kept.section))
    .catch(() => {});
  const timer = setTimeout(() => {
    void (async () => {
      const plain = await openSection(pool, deps, tenantId, full);
      if (full.made_from !== null)
        await writeBundleSectionBody(pool, tenantId, full.revision_id, full.sha256, await sealEnvelope(deps.secretBox, plain, full.chunk), deps.bodyPartBytes);
      if (deps.columns) {
        const kept = await deps.columns.get(sectionKey(tenantId, full), columnsSize(full.size, 0), async () => columnsOf(plain));
        deps.columns.prepareRoom(tenantId, kept.section);
      }
      // A failed write leaves the row as it was, which opens all the same: nothing to report.
    })().catch(() => {});
  }, deps.bodyDelayMs ?? SECTION_BODY_DELAY_MS);
  timer.unref();
}

/**
 * The plain bytes of a stored section, from the cache or the database: its sealed body opened,
 * or, for a full section stored as its base's and a delta, that delta applied to the base's
 * (opened the same way), or when that base is gone the revision's content encoded again. Checked
 * against the section's SHA-256 either way.
 */
export function openSection(db: Db, deps: SectionDeps, tenantId: string, section: StoredSection): Promise<Buffer> {
  const open = async (): Promise<Buffer> => {
    if (section.made_from === null) {
      const sealed = await readBundleSectionSlice(db, tenantId, section.revision_id, section.base_revision_id, 0, 2 ** 31 - 1);
      if (!sealed) throw new Error(`the prefix section of revision ${section.revision_id} is gone`);
      return openPieces(deps.secretBox, sealed, section.chunk);
    }
    const kept = await deps.columns?.peek(sectionKey(tenantId, section));
    if (kept) return kept.section.bytes;
    const plain = await madeSection(db, deps, tenantId, section);
    if (sha256Hex(plain) !== section.sha256)
      throw new Error(`the prefix section of revision ${section.revision_id} made from revision ${section.made_from}'s does not match its SHA-256`);
    return plain;
  };
  return deps.sections ? deps.sections.get(sectionKey(tenantId, section), section.size, open) : open();
}

/** A full section stored as its base's and a delta: made of them, or of the revision's content when either is gone (a prune took the base). */
async function madeSection(db: Db, deps: SectionDeps, tenantId: string, section: StoredSection): Promise<Buffer> {
  const base = await findBundleSection(db, tenantId, section.made_from!, 0);
  const delta = base && (await findBundleSection(db, tenantId, section.revision_id, base.revision_id));
  if (base && delta) return applyPrefixDeltaBytes(await openSection(db, deps, tenantId, base), await openSection(db, deps, tenantId, delta));
  const content = await deps.revisions.content(db, tenantId, section.revision_id);
  if (!content) throw new Error(`the prefix section of revision ${section.revision_id} is gone`);
  return fullSection(content);
}
