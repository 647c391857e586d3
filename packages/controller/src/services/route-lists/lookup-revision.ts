import { type Address, buildPrefixTableIndex, buildPrefixTextIndex, type PrefixTextIndex } from "@rlc/shared/prefix";
import { alignContents, forKept, tablesOf } from "../revisions/revision-align.js";
import type { RevisionContent, RevisionFamily } from "../revisions/revision-content.js";

/*
 * The lookup's revision layer: the longest prefix of a tenant's current revision that holds an
 * address, and its communities. Built from a revision's content into typed arrays (a
 * PrefixTextIndex, no string a prefix), and carried from one revision to the next by the change
 * between them when the layer's own content is still in memory: the prefixes the new revision
 * no longer has are marked gone in the index, the ones it adds (or gives other communities) go
 * into a small index beside it. A change too large for that (CHANGE_SHARE of the index), or a
 * content no longer in memory, builds the layer anew. Either way it answers as a layer built
 * from the new content would (the property test in lookup-revision.test.ts compares them).
 */

/** A layer is built anew once the prefixes beside its index or marked gone pass this share of it. */
const CHANGE_SHARE = 1 / 8;
/** …or this many, whichever is more: a small revision is quicker built than updated. */
const CHANGE_MIN = 1_000;

/** The answer of the revision layer for an address: its longest prefix there, with communities. */
export interface RevisionMatch {
  revision_id: number;
  prefix: string;
  communities: string[];
}

export interface RevisionLayer {
  readonly revisionId: number;
  /** The index the layer was built with: positions are the prefixes of its content, IPv4 then IPv6. */
  readonly index: PrefixTextIndex;
  /** The communities of position i: tagCommunities[tagOf[i]] (a typed array, not an array of a million references). */
  readonly tagOf: Uint32Array;
  readonly tagCommunities: string[][];
  /** Positions the revision no longer has (1), or null when none. */
  readonly gone: Uint8Array | null;
  readonly goneCount: number;
  /** Prefixes the revision has that the index lacks or holds with other communities. */
  readonly added: ReadonlyMap<string, string[]>;
  readonly addedIndex: PrefixTextIndex | null;
  /** The content this layer answers as, while something else keeps it in memory (the revision store, the builder). */
  readonly source: WeakRef<RevisionContent>;
  /** Bytes held (the lookup cache's budget). */
  readonly bytes: number;
}

/** Rough bytes a community list or a prefix beside the index holds. */
const BYTES_PER_ENTRY = 200;

function layerOf(parts: Omit<RevisionLayer, "bytes">): RevisionLayer {
  const bytes =
    parts.index.bytes +
    parts.tagOf.byteLength +
    parts.tagCommunities.length * BYTES_PER_ENTRY +
    (parts.gone?.byteLength ?? 0) +
    parts.added.size * BYTES_PER_ENTRY +
    (parts.addedIndex?.bytes ?? 0);
  return { ...parts, bytes };
}

/** The content's prefixes indexed: from its parsed prefixes where it has them (no text written or parsed), else from its texts. */
function indexOfContent(content: RevisionContent): PrefixTextIndex {
  const t = tablesOf(content);
  return t ? buildPrefixTableIndex(t.v4, t.v6) : buildPrefixTextIndex([...content.v4.texts(), ...content.v6.texts()]);
}

/** The layer of `content`, built whole. */
export function buildRevisionLayer(revisionId: number, content: RevisionContent): RevisionLayer {
  const { v4, v6 } = content;
  const tagOf = new Uint32Array(v4.length + v6.length);
  tagOf.set(v4.tags);
  tagOf.set(v6.tags, v4.length);
  return layerOf({
    revisionId,
    index: indexOfContent(content),
    tagOf,
    tagCommunities: content.tags.map((t) => t.communities),
    gone: null,
    goneCount: 0,
    added: new Map(),
    addedIndex: null,
    source: new WeakRef(content),
  });
}

/** Prefixes `from` has and `to` lacks, and those `to` has that `from` lacks or holds with other communities. */
export interface ContentChange {
  removed: string[];
  added: [string, string[]][];
}

/**
 * What changed from one content to the next, one family at a time, from where the two part
 * (alignContents: their parsed words when both carry them, else their texts) and the kept
 * prefixes whose communities differ. Answers null when the change passes `limit` prefixes (the
 * caller builds anew).
 */
export function contentChange(from: RevisionContent, to: RevisionContent, limit = Number.POSITIVE_INFINITY): ContentChange | null {
  const change: ContentChange = { removed: [], added: [] };
  // Each tag as the number of its communities' spelling, so that a prefix in both compares two numbers.
  const spellings = new Map<string, number>();
  const idsOf = (c: RevisionContent) =>
    Int32Array.from(c.tags, (t) => {
      const key = t.communities.join(",");
      let id = spellings.get(key);
      if (id === undefined) spellings.set(key, (id = spellings.size));
      return id;
    });
  const fromIds = idsOf(from);
  const toIds = idsOf(to);
  // Where the two part: by their parsed words when both carry them, else by their texts.
  const al = alignContents(from, to);
  for (const fam of ["v4", "v6"] as const) {
    const a: RevisionFamily = from[fam];
    const b: RevisionFamily = to[fam];
    const at = a.tags;
    const bt = b.tags;
    const { removed, added } = al[fam];
    if (change.removed.length + change.added.length + removed.length + added.length > limit) return null;
    // Kept prefixes whose communities differ count as removed and added again.
    const retagged: number[] = [];
    forKept(al[fam], a.length, (i, j) => {
      if (fromIds[at[i]!] !== toIds[bt[j]!]) retagged.push(i, j);
    });
    if (change.removed.length + change.added.length + removed.length + added.length + retagged.length > limit) return null;
    // Each list in address order: the positions apart merged with the retagged ones.
    for (let r = 0, k = 0; r < removed.length || k < retagged.length; ) {
      if (k >= retagged.length || (r < removed.length && removed[r]! < retagged[k]!)) change.removed.push(a.prefixAt(removed[r++]!));
      else {
        change.removed.push(a.prefixAt(retagged[k]!));
        k += 2;
      }
    }
    for (let r = 0, k = 1; r < added.length || k < retagged.length; ) {
      let j: number;
      if (k < retagged.length && (r >= added.length || retagged[k]! < added[r]!)) {
        j = retagged[k]!;
        k += 2;
      } else j = added[r++]!;
      change.added.push([b.prefixAt(j), to.tags[bt[j]!]!.communities]);
    }
  }
  return change;
}

/** The index position holding exactly `prefix`, or -1. */
function positionOf(index: PrefixTextIndex, prefix: string): number {
  const slash = prefix.indexOf("/");
  const found = index.lookup(prefix.slice(0, slash));
  for (let k = found.length - 1; k >= 0; k--) if (index.text(found[k]!) === prefix) return found[k]!;
  return -1;
}

/**
 * The layer of revision `revisionId` with content `next`: `layer` carried over by the change
 * from its own content when that is still in memory and the change is small, else built whole.
 */
export function nextRevisionLayer(layer: RevisionLayer | null, revisionId: number, next: RevisionContent): RevisionLayer {
  const from = layer?.source.deref();
  if (!layer || !from) return buildRevisionLayer(revisionId, next);
  if (from === next) return { ...layer, revisionId };
  const room = Math.max(CHANGE_MIN, Math.floor(layer.index.size * CHANGE_SHARE));
  const change = contentChange(from, next, room - layer.goneCount - layer.added.size);
  if (!change) return buildRevisionLayer(revisionId, next);
  const added = new Map(layer.added);
  let gone: Uint8Array | null = null;
  let goneCount = layer.goneCount;
  for (const prefix of change.removed) {
    if (added.delete(prefix)) continue;
    const at = positionOf(layer.index, prefix);
    if (at < 0 || layer.gone?.[at]) continue; // not there: the change was taken against another content
    gone ??= layer.gone ? layer.gone.slice() : new Uint8Array(layer.index.size);
    gone[at] = 1;
    goneCount++;
  }
  for (const [prefix, communities] of change.added) added.set(prefix, communities);
  if (goneCount + added.size > room) return buildRevisionLayer(revisionId, next);
  return layerOf({
    revisionId,
    index: layer.index,
    tagOf: layer.tagOf,
    tagCommunities: layer.tagCommunities,
    gone: gone ?? layer.gone,
    goneCount,
    added,
    addedIndex: added.size > 0 ? buildPrefixTextIndex([...added.keys()]) : null,
    source: new WeakRef(next),
  });
}

const lengthOf = (prefix: string) => Number(prefix.slice(prefix.indexOf("/") + 1));

/** The longest prefix of the layer's revision that holds `address`, or null. */
export function longestInLayer(layer: RevisionLayer, address: Address): RevisionMatch | null {
  let best = layer.index.longest(address);
  if (best >= 0 && layer.gone?.[best]) {
    // Gone from the revision: the next shorter one there, if any.
    const all = layer.index.lookup(address);
    best = -1;
    for (let k = all.length - 1; k >= 0; k--) {
      if (!layer.gone[all[k]!]) {
        best = all[k]!;
        break;
      }
    }
  }
  const fromIndex = best >= 0 ? layer.index.text(best) : null;
  const beside = layer.addedIndex ? layer.addedIndex.longest(address) : -1;
  const fromAdded = beside >= 0 ? layer.addedIndex!.text(beside) : null;
  if (fromAdded !== null && (fromIndex === null || lengthOf(fromAdded) > lengthOf(fromIndex))) {
    return { revision_id: layer.revisionId, prefix: fromAdded, communities: layer.added.get(fromAdded)! };
  }
  if (fromIndex === null) return null;
  return { revision_id: layer.revisionId, prefix: fromIndex, communities: layer.tagCommunities[layer.tagOf[best]!]! };
}
