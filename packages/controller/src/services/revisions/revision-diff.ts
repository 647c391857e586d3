import { NotFoundError } from "@rlc/shared/errors";
import { type CommunityChange, diffTagged, type TaggedDiff } from "@rlc/shared/prefix";
import type { Db } from "../../db/connect.js";
import { type Alignment, alignContents, forKeptRuns } from "./revision-align.js";
import type { RevisionChange } from "./revision-change.js";
import type { RevisionContent, RevisionTag } from "./revision-content.js";
import { composeDiffs } from "./revision-diff-chain.js";
import type { RevisionStore } from "./revision-store.js";

/** The change of communities between a tag of one content and a tag of another (null: none), worked out once a pair. */
function pairChanges(fromTags: readonly RevisionTag[], toTags: readonly RevisionTag[]): (a: number, b: number) => Omit<CommunityChange, "prefix"> | null {
  const pairs = new Map<number, Omit<CommunityChange, "prefix"> | null>();
  const nNew = Math.max(1, toTags.length);
  return (a, b) => {
    const key = a * nNew + b;
    let c = pairs.get(key);
    if (c === undefined) {
      const [changed] = diffTagged(
        [{ prefix: "0.0.0.0/0", communities: fromTags[a]!.communities }],
        [{ prefix: "0.0.0.0/0", communities: toTags[b]!.communities }],
      ).changed;
      c = changed ? { from_communities: changed.from_communities, to_communities: changed.to_communities } : null;
      pairs.set(key, c);
    }
    return c;
  };
}

/**
 * diffTagged's answer for two contents, from their alignment: the removed and added prefixes
 * are the alignment's, and a kept prefix changed when its communities differ, which is decided
 * once a pair of tags (by diffTagged itself, on a one-prefix list each), not once a prefix.
 */
export function diffAligned(from: RevisionContent, to: RevisionContent, al: Alignment): TaggedDiff {
  const diff: TaggedDiff = { added: [], removed: [], changed: [] };
  const changeOf = pairChanges(from.tags, to.tags);
  for (const fam of ["v4", "v6"] as const) {
    const a = from[fam];
    const b = to[fam];
    for (const i of al[fam].removed) diff.removed.push({ prefix: a.prefixAt(i), communities: from.tags[a.tags[i]!]!.communities });
    for (const j of al[fam].added) diff.added.push({ prefix: b.prefixAt(j), communities: to.tags[b.tags[j]!]!.communities });
    if (from.tags === to.tags) {
      // One numbering: a kept prefix changed only where its tag did.
      forKeptRuns(al[fam], a.length, (i, j, n) => {
        for (let k = 0; k < n; k++) {
          if (a.tags[i + k] === b.tags[j + k]) continue;
          const c = changeOf(a.tags[i + k]!, b.tags[j + k]!);
          if (c) diff.changed.push({ prefix: b.prefixAt(j + k), from_communities: c.from_communities, to_communities: c.to_communities });
        }
      });
      continue;
    }
    // Each pair of tags decided once, then looked up in a typed array (0: not yet, 1: same
    // communities, 2: changed), not a map, a kept prefix at a time.
    const nNew = Math.max(1, to.tags.length);
    const state = from.tags.length * nNew <= 1 << 22 ? new Uint8Array(from.tags.length * nNew) : null;
    forKeptRuns(al[fam], a.length, (i, j, n) => {
      for (let k = 0; k < n; k++) {
        const ta = a.tags[i + k]!;
        const tb = b.tags[j + k]!;
        if (state) {
          const key = ta * nNew + tb;
          if (state[key] === 0) state[key] = changeOf(ta, tb) ? 2 : 1;
          if (state[key] === 1) continue;
        }
        const c = changeOf(ta, tb);
        if (c) diff.changed.push({ prefix: b.prefixAt(j + k), from_communities: c.from_communities, to_communities: c.to_communities });
      }
    });
  }
  return diff;
}

/**
 * diffAligned(parent, child) for a child stored as `change` against `parent`, without the
 * child's content: the removed prefixes are the parent's, the added ones the change's, and a
 * kept prefix takes its parent tag's mapped tag (change.map) unless retagged. When no parent
 * tag maps to a tag of other communities, only the retagged prefixes can have changed, and
 * the kept prefixes are not walked one by one: a diff of two revisions of a million prefixes
 * that differ by 1 % costs the change, not the million.
 */
export function diffFromChange(parent: RevisionContent, change: RevisionChange): TaggedDiff {
  const diff: TaggedDiff = { added: [], removed: [], changed: [] };
  const changeOf = pairChanges(parent.tags, change.tags);
  const mapped = (t: number) => change.map[t]!;
  let anyMoves = false;
  for (let t = 0; t < parent.tags.length && !anyMoves; t++) anyMoves = mapped(t) >= 0 && changeOf(t, mapped(t)) !== null;
  for (const fam of ["v4", "v6"] as const) {
    const a = parent[fam];
    const c = change[fam];
    for (const i of c.removed) diff.removed.push({ prefix: a.prefixAt(i), communities: parent.tags[a.tags[i]!]!.communities });
    c.addedPrefixes.forEach((prefix, k) => {
      diff.added.push({ prefix, communities: change.tags[c.addedTags[k]!]!.communities });
    });
    const push = (i: number, to: number) => {
      const x = changeOf(a.tags[i]!, to);
      if (x) diff.changed.push({ prefix: a.prefixAt(i), from_communities: x.from_communities, to_communities: x.to_communities });
    };
    let r = 0;
    forKeptRuns(c, a.length, (i, j, n) => {
      if (anyMoves) {
        for (let k = 0; k < n; k++) {
          if (r < c.retagAt.length && c.retagAt[r] === j + k) push(i + k, c.retagTags[r++]!);
          else push(i + k, mapped(a.tags[i + k]!));
        }
        return;
      }
      for (; r < c.retagAt.length && c.retagAt[r]! < j + n; r++) push(i + c.retagAt[r]! - j, c.retagTags[r]!);
    });
  }
  return diff;
}

/**
 * diffFromChange without the parent's content, from what the change keeps of it (the removed
 * and retagged prefixes' texts, the parent's communities): null when the change does not keep
 * them (stored before it did) or when a parent tag maps to a tag of other communities (every
 * kept prefix of it changed: the parent's content is needed to name them).
 */
export function diffFromChangeAlone(change: RevisionChange): TaggedDiff | null {
  const parentCommunities = change.parentCommunities;
  if (!parentCommunities || !change.v4.retagFrom || !change.v6.retagFrom) return null;
  const parentTags = parentCommunities.map((communities) => ({ communities, modules: [] }));
  const changeOf = pairChanges(parentTags, change.tags);
  for (let t = 0; t < parentTags.length; t++) if (change.map[t]! >= 0 && changeOf(t, change.map[t]!) !== null) return null;
  const diff: TaggedDiff = { added: [], removed: [], changed: [] };
  for (const fam of ["v4", "v6"] as const) {
    const c = change[fam];
    c.removedPrefixes!.forEach((prefix, k) => {
      diff.removed.push({ prefix, communities: parentCommunities[c.removedTags![k]!]! });
    });
    c.addedPrefixes.forEach((prefix, k) => {
      diff.added.push({ prefix, communities: change.tags[c.addedTags[k]!]!.communities });
    });
    // Only a retagged prefix can have changed (in the new family's order, as retagAt is).
    for (let r = 0; r < c.retagAt.length; r++) {
      const x = changeOf(c.retagFrom![r]!, c.retagTags[r]!);
      if (x) diff.changed.push({ prefix: c.retagPrefixes![r]!, from_communities: x.from_communities, to_communities: x.to_communities });
    }
  }
  return diff;
}

/** diff(a, b) as diff(b, a) answered it: removed and added swapped, each change turned round. */
export function reversed(d: TaggedDiff): TaggedDiff {
  return {
    added: d.removed,
    removed: d.added,
    changed: d.changed.map((c) => ({ prefix: c.prefix, from_communities: c.to_communities, to_communities: c.from_communities })),
  };
}

/**
 * The diff of two revisions. When one is stored as a change against the other, from that change
 * alone (diffFromChangeAlone: a cold diff of two million-prefix revisions reads ~100 kB, not a
 * 10 MB content to inflate and parse), or with the other's content (diffFromChange); when one
 * is a few changes after the other on its chain, from those changes (composeDiffs); else one
 * merge walk over both (by their parsed words where both carry them).
 */
export async function diffRevisions(store: RevisionStore, db: Db, tenantId: string, a: number, b: number): Promise<TaggedDiff> {
  const content = async (id: number) => {
    const c = await store.content(db, tenantId, id);
    if (!c) throw new NotFoundError("revision", id);
    return c;
  };
  // One a change, or a few, after the other on its chain: from those changes alone (each
  // step's diff, composed), or for a parent and child with the parent's content.
  const [older, newer] = a < b ? [a, b] : [b, a];
  const along = await store.changesAlong(db, tenantId, older, newer);
  if (along) {
    const steps = along.map(diffFromChangeAlone);
    let d: TaggedDiff | null = null;
    if (steps.every((x) => x !== null)) d = steps.length === 1 ? steps[0]! : composeDiffs(steps as TaggedDiff[]);
    else if (along.length === 1) d = diffFromChange(await content(older), along[0]!);
    if (d) return a < b ? d : reversed(d);
  }
  const from = await content(a);
  const to = await content(b);
  return diffAligned(from, to, alignContents(from, to));
}
