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
import { compactContent, prefixCount, type RevisionContent } from "./revision-content.js";
import { decodeContent, encodeContent, encodeContentAsync } from "./revision-encoding.js";

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

export function createRevisionStore(
  opts: {
    entries?: number;
    chain?: Partial<ChainPolicy>;
    /** Told of a rewrite after the commit (compactLater) that failed: the revision stays stored as a change. */
    onRewriteError?: (err: unknown, revision: { tenantId: string; revisionId: number }) => void;
  } = {},
) {
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
     * stored against `parentId` (a prune may have rewritten it whole first) and still past the
     * bound (the rewrite of one before it on the chain may have brought it back within). A
     * rewrite that fails (told to `onRewriteError`: the controller logs it) or never comes leaves
     * a change that reads the same; a chain four times the bound starts again whole (storedForm).
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
            .catch((err: unknown) => {
              opts.onRewriteError?.(err, { tenantId, revisionId });
              return false;
            })
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
