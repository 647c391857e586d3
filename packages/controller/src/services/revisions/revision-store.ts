import { setImmediate as yieldLoop } from "node:timers/promises";
import { promisify } from "node:util";
import { gunzipSync, gzip, gzipSync } from "node:zlib";
import { writePrefixLines } from "@rlc/shared/prefix";
import type { Db } from "../../db/connect.js";
import {
  clearLinksTo,
  findChain,
  findChainLinks,
  findDiffLinks,
  findStoredContents,
  listDependents,
  rewriteChangeWhole,
  rewriteContentWhole,
  type StoredContent,
} from "../../db/revisions.js";
import { type Alignment, alignContents, alignSpliced } from "./revision-align.js";
import type { RevisionChange as RevisionBuildChange } from "./revision-build.js";
import { applyChange, changeSize, decodeChange, encodeChange, makeChange, type RevisionChange } from "./revision-change.js";
import {
  compactContent,
  contentFromEntries,
  prefixCount,
  type RevisionContent,
  type RevisionEntry,
  RevisionFamily,
  type RevisionTag,
} from "./revision-content.js";

/*
 * Stored form (gzip'd JSON, format 2), columnar:
 *   {"format":2,"modules":[ids],"tags":[[[communities],[module indexes]],...],
 *    "v4":{"prefixes":"p1 p2 ...","tags":[tag of p1, ...]},"v6":{...}}
 * Prefixes are one space-separated string (no escapes to undo, one split to read back).
 * Measured for 1M prefixes in 2 modules: 3.2 MB gzip'd, encode 0.22-0.47 s, decode 0.16-0.23 s.
 * The tuple form (`[[prefix, [communities], [module uuids]], ...]`) was 72 MB of JSON and
 * 4.1 MB gzip'd, encode 0.8-1.4 s, decode 1.9-2.3 s, and a million small arrays once decoded.
 */
const gzipAsync = promisify(gzip);

interface Stored {
  format: 2;
  modules: string[];
  tags: [string[], number[]][];
  v4: { prefixes: string; tags: number[] };
  v6: { prefixes: string; tags: number[] };
}

/** Plain JSON text compressed at a time (one gzip member each): ~1 MiB. */
const PIECE_CHARS = 1 << 20;

/** Text JSON writes as it is: no quote, backslash, control or non-ASCII character (a prefix's). */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A piece of the stored JSON: its UTF-8 bytes, and its length in characters (what PIECE_CHARS counts). */
type JsonPiece = [bytes: Buffer, chars: number];

const SPACE = Uint8Array.of(32);

const textPiece = (text: string): JsonPiece => [Buffer.from(text, "utf8"), text.length];

/**
 * `tags` written as decimal numbers joined by commas, after a comma when `comma`: by hand into
 * bytes, as TypedArray.join takes ~0.2 s for the 1.2M tags of the bench's revision.
 */
function tagsPiece(tags: Uint32Array, comma: boolean): JsonPiece {
  const buf = Buffer.allocUnsafe(tags.length * 11 + 1);
  let pos = 0;
  for (let i = 0; i < tags.length; i++) {
    if (i > 0 || comma) buf[pos++] = 44;
    let v = tags[i]!;
    if (v < 10) {
      buf[pos++] = 48 + v;
      continue;
    }
    const start = pos;
    while (v > 0) {
      buf[pos++] = 48 + (v % 10);
      v = Math.floor(v / 10);
    }
    for (let a = start, b = pos - 1; a < b; a++, b--) {
      const t = buf[a]!;
      buf[a] = buf[b]!;
      buf[b] = t;
    }
  }
  return [buf.subarray(0, pos), pos];
}

/**
 * The stored JSON's text in pieces of about PIECE_CHARS: a family's prefixes and tags joined a
 * slice at a time, never the whole document (40 MB for 1.2M prefixes) or a whole column as one
 * string. Written as bytes: a slice of prefixes that needs no escaping (canonical prefixes never
 * do) is its joined text as Latin-1 bytes, without JSON.stringify's scan and copy; the text and
 * bytes are those of the string form it replaced (revision-store.test.ts compares the two).
 */
function* contentJson(c: RevisionContent): Generator<JsonPiece> {
  const head = JSON.stringify({ format: 2, modules: c.modules, tags: c.tags.map((t) => [t.communities, t.modules]) });
  yield textPiece(`${head.slice(0, -1)},`);
  for (const fam of ["v4", "v6"] as const) {
    const { tags } = c[fam];
    const count = c[fam].length;
    yield textPiece(`"${fam}":{"prefixes":"`);
    // A slice's JSON string without its quotes: escaping is per character, so the slices in a row
    // read as the one string of every prefix joined by spaces.
    const table = c[fam].table;
    const spaces = table ? [SPACE] : null;
    const zeros = table ? new Uint8Array(table.count) : null;
    const prefixes = table ? null : c[fam].texts();
    for (let i = 0; i < count; i += 50_000) {
      if (table) {
        // Written from the parsed prefixes: `p p … p ` (writePrefixLines, a space after each),
        // turned into the slice's text, ` p … p` after the first.
        const { bytes } = writePrefixLines(table, zeros!, spaces!, i, Math.min(count, i + 50_000));
        const sep = i ? 1 : 0;
        const out = Buffer.allocUnsafe(bytes.length - 1 + sep);
        if (sep) out[0] = 32;
        out.set(bytes.subarray(0, bytes.length - 1), sep);
        yield [out, out.length];
        continue;
      }
      const joined = prefixes!.slice(i, i + 50_000).join(" ");
      const sep = i ? 1 : 0;
      if (!PLAIN.test(joined)) {
        yield textPiece(`${i ? " " : ""}${JSON.stringify(joined).slice(1, -1)}`);
        continue;
      }
      const bytes = Buffer.allocUnsafe(joined.length + sep);
      if (sep) bytes[0] = 32;
      bytes.write(joined, sep, "latin1");
      yield [bytes, bytes.length];
    }
    yield textPiece(`","tags":[`);
    for (let i = 0; i < tags.length; i += 200_000) yield tagsPiece(tags.subarray(i, i + 200_000), i > 0);
    yield textPiece(fam === "v4" ? "]}," : "]}}");
  }
}

/** The stored JSON's bytes in pieces of about PIECE_CHARS characters, each compressed on its own. */
function* plainPieces(c: RevisionContent): Generator<Buffer> {
  let piece: Buffer[] = [];
  let chars = 0;
  const joined = () => (piece.length === 1 ? piece[0]! : Buffer.concat(piece));
  let any = false;
  for (const [bytes, n] of contentJson(c)) {
    piece.push(bytes);
    chars += n;
    if (chars >= PIECE_CHARS) {
      yield joined();
      any = true;
      piece = [];
      chars = 0;
    }
  }
  if (chars > 0 || !any) yield joined();
}

const asContent = (content: RevisionContent | { v4: readonly RevisionEntry[]; v6: readonly RevisionEntry[] }): RevisionContent =>
  content.v4 instanceof RevisionFamily ? (content as RevisionContent) : contentFromEntries(content.v4 as RevisionEntry[], content.v6 as RevisionEntry[]);

// Level 1: within a few percent of level 9 on this data, several times faster.
const GZIP = { level: 1 } as const;

/**
 * `content` may also be tuple lists (`{v4: [[prefix, communities, module_ids]], v6}`), as tests write them.
 * The JSON is compressed a piece at a time, each piece a gzip member of its own (RFC 1952
 * allows members in a row; gunzip reads them as one stream), so that the refresh that stores a
 * revision whole never holds the document as one string: for 1.2M prefixes that was ~80 MB more
 * at the refresh's peak (the joined columns, the document, its bytes). Only decodeContent reads
 * these bytes.
 */
export function encodeContent(content: RevisionContent | { v4: readonly RevisionEntry[]; v6: readonly RevisionEntry[] }): Buffer {
  const members: Buffer[] = [];
  for (const piece of plainPieces(asContent(content))) members.push(gzipSync(piece, GZIP));
  return Buffer.concat(members);
}

/**
 * The same bytes as encodeContent, made beside the event loop: each piece compressed on the
 * thread pool, and the loop let go between pieces (at 1.2M prefixes the whole encode holds it
 * ~0.3 s). What a revision's rewrite after its commit uses (compactLater).
 */
export async function encodeContentAsync(content: RevisionContent): Promise<Buffer> {
  const members: Promise<Buffer>[] = [];
  for (const piece of plainPieces(content)) {
    members.push(gzipAsync(piece, GZIP));
    await yieldLoop();
  }
  return Buffer.concat(await Promise.all(members));
}

export function decodeContent(data: Buffer): RevisionContent {
  const stored = JSON.parse(gunzipSync(data).toString("utf8")) as Stored;
  if (stored.format !== 2) throw new Error(`revision content format ${String(stored.format)} is not known`);
  const tags: RevisionTag[] = stored.tags.map(([communities, modules]) => ({ communities, modules }));
  const owner = { modules: stored.modules, tags };
  // Kept as the one text it was stored as: compact (RevisionFamily.fromJoined).
  const family = (f: Stored["v4"], family: 4 | 6) => RevisionFamily.fromJoined(f.prefixes, family, Uint32Array.from(f.tags), owner);
  return { ...owner, v4: family(stored.v4, 4), v6: family(stored.v6, 6) };
}

/** When a revision is stored as a change against its parent rather than whole. */
export interface ChainPolicy {
  /** Changes in a row before a whole content again (0: every revision whole). */
  maxDepth: number;
  /** A change at most this share of the new content's prefixes in entries, else whole. */
  maxChangeShare: number;
  /** The chain's entries since the last whole content at most this share of the prefixes. */
  maxChainShare: number;
}

/*
 * A read of a revision at depth d decodes the last whole content and applies d changes, each a
 * copy of the parent's arrays (a million prefixes: ~10 ms) and its own entries; a change entry
 * (a position and maybe a prefix) costs more bytes than a whole content's prefix, so a change of
 * more than a quarter of the prefixes is not smaller.
 */
export const DEFAULT_CHAIN: ChainPolicy = { maxDepth: 8, maxChangeShare: 0.25, maxChainShare: 0.5 };

/**
 * Revision contents by (tenant, revision). Revisions never change, so a decoded copy can be
 * kept in memory without ever going stale; the database stays the only source. A content stored
 * as a change is read by applying it to its parent's (cached, or read the same way).
 */
/** The most stored changes a diff composes (revision-diff-chain.ts); further apart, both contents are read whole. */
const MAX_DIFF_STEPS = 64;

export function createRevisionStore(opts: { entries?: number; chain?: Partial<ChainPolicy> } = {}) {
  // A decoded million-prefix content is ~45 MB, strings mostly (the tuple form was ~150 MB).
  // Contents read through a change share the kept prefixes' strings with their parent.
  const max = opts.entries ?? 4;
  const policy: ChainPolicy = { ...DEFAULT_CHAIN, ...opts.chain };
  const cache = new Map<string, RevisionContent>();
  // Decoded changes (small) by (tenant, revision): the diff of a revision and its parent reads them.
  const changes = new Map<string, { parentId: number; change: RevisionChange }>();
  const keepIn = <T>(map: Map<string, T>, limit: number, key: string, value: T) => {
    map.delete(key);
    map.set(key, value);
    while (map.size > limit) map.delete(map.keys().next().value!);
  };
  // Kept compact: the texts of the contents kept here were most of the controller's heap.
  const keep = (key: string, content: RevisionContent) => keepIn(cache, max, key, compactContent(content));
  // The last alignment walked (the guard's), which the commit of the same content reuses.
  let aligned: { from: RevisionContent; to: RevisionContent; al: Alignment } | null = null;

  /** A chain `depth` changes deep holding `changes` entries, for a content of `prefixes`: past the policy's bound `times` over. */
  const pastBound = (depth: number, changes: number, prefixes: number, times = 1) =>
    depth > times * policy.maxDepth || changes > Math.max(1, prefixes) * times * policy.maxChainShare;

  const store = {
    /** When a revision is stored as a change (the bundle sections' full ones follow the same bound: bundle-sections.ts). */
    policy: policy as Readonly<ChainPolicy>,

    async content(db: Db, tenantId: string, revisionId: number): Promise<RevisionContent | undefined> {
      const key = `${tenantId}:${revisionId}`;
      const hit = cache.get(key);
      if (hit) {
        keep(key, hit);
        return hit;
      }
      // The chain down to a content cached here or stored whole, then its contents in one read.
      const links = await findChainLinks(db, tenantId, revisionId);
      if (!links.length) return undefined;
      let content: RevisionContent | undefined;
      let need = links.length;
      for (let k = 1; k < links.length && !content; k++) {
        content = cache.get(`${tenantId}:${links[k]!.revision_id}`);
        if (content) need = k;
      }
      const rows = await findStoredContents(
        db,
        tenantId,
        links.slice(0, need).map((l) => l.revision_id),
      );
      for (let k = need - 1; k >= 0; k--) {
        const id = links[k]!.revision_id;
        const row = rows.get(id);
        if (!row) throw new Error(`revision ${id}'s stored content is gone`);
        if (row.parent_id === null) content = decodeContent(row.content);
        else {
          const change = decodeChange(row.content);
          keepIn(changes, 4 * max, `${tenantId}:${id}`, { parentId: row.parent_id, change });
          // The key keeps every parent while a child needs it: a missing one is a broken database.
          if (!content) throw new Error(`revision ${id}'s parent ${row.parent_id} is gone`);
          content = applyChange(content, change);
        }
      }
      if (!content) return undefined;
      keep(key, content);
      return content;
    },

    /**
     * The stored changes from `ancestor` to `descendant`, oldest first, when `descendant` is
     * stored as a chain of changes that passes through `ancestor`; else null.
     */
    async changesAlong(db: Db, tenantId: string, ancestor: number, descendant: number): Promise<RevisionChange[] | null> {
      if (ancestor >= descendant) return null;
      const key = (id: number) => `${tenantId}:${id}`;
      // Newest first: down the decoded changes kept here, then the chain's links for the rest.
      const out: RevisionChange[] = [];
      let id = descendant;
      for (let hit = changes.get(key(id)); hit && id > ancestor; hit = changes.get(key(id))) {
        out.push(hit.change);
        id = hit.parentId;
      }
      if (id === ancestor) return out.reverse();
      if (id < ancestor || out.length >= MAX_DIFF_STEPS) return null;
      // Through the chains' changes and, where a chain was full, a whole content's link.
      const links = await findDiffLinks(db, tenantId, id, MAX_DIFF_STEPS - out.length);
      const k = links.findIndex((l) => l.revision_id === ancestor);
      if (k <= 0) return null;
      const steps = links.slice(0, k);
      const missing = steps.filter((l) => !changes.has(key(l.revision_id))).map((l) => l.revision_id);
      const rows = missing.length ? await findStoredContents(db, tenantId, missing) : new Map<number, StoredContent>();
      for (const step of steps) {
        let hit = changes.get(key(step.revision_id));
        if (!hit) {
          const row = rows.get(step.revision_id);
          if (!row) return null;
          if (row.parent_id !== null) hit = { parentId: row.parent_id, change: decodeChange(row.content) };
          else if (row.link_parent_id != null && row.link_change) hit = { parentId: row.link_parent_id, change: decodeChange(row.link_change) };
          else return null;
          keepIn(changes, 4 * max, key(step.revision_id), hit);
        }
        out.push(hit.change);
      }
      return out.reverse();
    },

    /**
     * Where `from` and `to` part (revision-align.ts); the last pair is remembered. `change`: how
     * an incremental build made `to` (BuiltRevision.change); when made from `from`, only the
     * ranges it replaced are walked (two built contents are aligned by their parsed prefixes: alignContents).
     */
    align(from: RevisionContent, to: RevisionContent, change?: RevisionBuildChange): Alignment {
      if (aligned?.from !== from || aligned.to !== to) {
        aligned = { from, to, al: change?.parent === from ? alignSpliced(to, change) : alignContents(from, to) };
      }
      return aligned.al;
    },

    /**
     * How to store `content` as the revision after `parentId` (the current one): a change
     * against it when that is smaller and the chain stays within the policy, else whole
     * (`built`: the build's change, as for align). A change that takes the chain past the bound
     * is stored as a change all the same, with `wholeLater` set: the committer has it rewritten
     * whole once the refresh has committed (compactLater), so that the refresh that meets the
     * bound does not encode and write a whole content (at 1.2M prefixes ~0.45 s, more than the
     * rest of an incremental refresh). Refreshes that follow within the rewrite's delay go on
     * the same way; the first rewrite takes their depth down with it (rewriteChangeWhole), and
     * theirs then find them within the bound. A chain four times the bound (a burst of more
     * refreshes than the delay lets the first rewrite come, or rewrites that never came: the
     * process stopped) starts again whole at once.
     */
    async storedForm(
      db: Db,
      tenantId: string,
      parentId: number | null,
      content: RevisionContent,
      built?: RevisionBuildChange,
    ): Promise<StoredContent & { wholeLater?: true }> {
      const whole = (): StoredContent => ({ content: encodeContent(content), parent_id: null, chain_depth: 0, chain_changes: 0 });
      if (parentId === null || policy.maxDepth === 0) return whole();
      const chain = await findChain(db, tenantId, parentId);
      if (!chain) return whole();
      const parent = await store.content(db, tenantId, parentId);
      if (!parent) return whole();
      const change = makeChange(parent, content, store.align(parent, content, built), built);
      const size = changeSize(change);
      const n = Math.max(1, prefixCount(content));
      if (size > n * policy.maxChangeShare) return whole();
      const stored = { content: encodeChange(change), parent_id: parentId, chain_depth: chain.chain_depth + 1, chain_changes: chain.chain_changes + size };
      // Past the policy's bound (`times` 1), or four times: a cold read of such a chain applies
      // 32 changes (~10 ms each at 1M prefixes) to its whole content.
      const past = (times: number) => pastBound(stored.chain_depth, stored.chain_changes, n, times);
      if (!past(1)) return stored;
      // A full chain starts again from this content, which keeps the change as its link: a
      // diff of revisions on either side walks through it rather than reading both whole.
      if (past(4)) return { ...whole(), link_parent_id: parentId, link_change: stored.content };
      return { ...stored, wholeLater: true };
    },

    /**
     * A revision stored as a change past its chain's bound (storedForm's `wholeLater`), rewritten
     * whole `delayMs` after its commit, on the pool, beside the event loop (encodeContentAsync):
     * its change kept as its link, as storedForm's whole form keeps it. Only while it is still
     * stored against `parentId` (a prune may have rewritten it whole first). A rewrite that fails
     * or never comes leaves a change that reads the same; the revision after it is then stored whole.
     */
    compactLater(pool: Db, tenantId: string, revisionId: number, parentId: number, delayMs: number): Promise<boolean> {
      return new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => {
          void (async () => {
            // Still stored against `parentId` and still past the bound: the rewrite of a revision
            // before it on its chain takes its descendants' depth down with it (rewriteChangeWhole).
            const chain = await findChain(pool, tenantId, revisionId);
            if (chain?.parent_id !== parentId) return false;
            const content = await store.content(pool, tenantId, revisionId);
            if (!content || !pastBound(chain.chain_depth, chain.chain_changes, prefixCount(content))) return false;
            return rewriteChangeWhole(pool, tenantId, revisionId, parentId, await encodeContentAsync(content));
          })()
            .catch(() => false)
            .then(resolve);
        }, delayMs);
        timer.unref();
      });
    },

    /**
     * Before `ids` are deleted: every other revision stored as a change against one of them is
     * stored whole instead, so that no kept revision loses its parent.
     */
    async rebaseDependents(db: Db, tenantId: string, ids: number[]): Promise<number[]> {
      await clearLinksTo(db, tenantId, ids);
      const dependents = await listDependents(db, tenantId, ids);
      for (const id of dependents) {
        const content = await store.content(db, tenantId, id);
        await rewriteContentWhole(db, tenantId, id, encodeContent(content!));
        changes.delete(`${tenantId}:${id}`);
      }
      return dependents;
    },

    /**
     * Drops what is kept of a revision id about to be written: only a transaction that rolled
     * back after reading its own new row (the sections are built from it) can have left one.
     */
    forget(tenantId: string, revisionId: number) {
      cache.delete(`${tenantId}:${revisionId}`);
      changes.delete(`${tenantId}:${revisionId}`);
    },

    /** A content just written: cached so the first reader does not decode it again. */
    remember(tenantId: string, revisionId: number, content: RevisionContent) {
      keep(`${tenantId}:${revisionId}`, content);
    },
  };
  return store;
}

export type RevisionStore = ReturnType<typeof createRevisionStore>;
