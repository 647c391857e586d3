import { gunzipSync, gzipSync } from "node:zlib";
import { PrefixTable, parsePrefixTexts } from "@rlc/shared/prefix";
import { type Alignment, alignContents, type FamilyAlignment, forKeptRuns } from "./revision-align.js";
import type { RevisionChange as BuildChange } from "./revision-build.js";
import { type RevisionContent, RevisionFamily, type RevisionTag } from "./revision-content.js";

/**
 * A revision's content as a change against its parent's: the new content's module ids and tags
 * whole (a few hundred entries), `map` from each parent tag to the tag its kept prefixes take
 * (most of them: the rest are `retag`ged), and per family the alignment (revision-align.ts)
 * with the added prefixes and their tags. Applied to the parent's content it gives the new
 * content exactly: the same prefixes, the same tag numbers, the same bytes once encoded.
 */
export interface RevisionChange {
  modules: string[];
  tags: RevisionTag[];
  map: Int32Array;
  v4: FamilyChange;
  v6: FamilyChange;
  /**
   * The parent's tags' communities, with each family's removed and retagged prefixes' texts
   * (below): enough for the diff of the two revisions without the parent's content
   * (diffFromChangeAlone). Changes stored before they were kept have none.
   */
  parentCommunities?: string[][];
}

export interface FamilyChange extends FamilyAlignment {
  /** The new family's length. */
  length: number;
  addedPrefixes: string[];
  addedTags: Uint32Array;
  /** Positions in the new family of kept prefixes whose tag is not `map`'s, and their tags. */
  retagAt: Uint32Array;
  retagTags: Uint32Array;
  /** The removed prefixes' texts and parent tags, the retagged prefixes' texts and parent tags (see RevisionChange.parentCommunities). */
  removedPrefixes?: string[];
  removedTags?: Uint32Array;
  retagPrefixes?: string[];
  retagFrom?: Uint32Array;
}

/** Entries a change holds: what a read applies beyond copying the parent. */
export const changeSize = (c: RevisionChange) =>
  c.v4.removed.length + c.v4.added.length + c.v4.retagAt.length + c.v6.removed.length + c.v6.added.length + c.v6.retagAt.length;

/** Kept prefixes whose new tag is not the tag map's for their old one: new positions (ascending), new tags, old tags. */
interface Retags {
  at: number[];
  tags: number[];
  from: number[];
}

/**
 * For each old tag, the new tag most of its kept prefixes take (ties: the lower), -1 for none;
 * and the kept prefixes retagged, when the same walk tells them. Counted in one pass over the
 * kept prefixes: the first new tag an old tag meets in a typed array (most of its prefixes keep
 * it), every kept prefix that meets another listed (the few retagged). When each old tag's
 * majority is the first it met (a change of a few modules' prefixes), the retagged are exactly
 * the listed ones, in order, and the second walk over every kept prefix for them (a million
 * prefixes: ~5 ms) is not needed; else `retags` is null and the caller walks for them.
 */
function tagWalk(from: RevisionContent, to: RevisionContent, al: Alignment): { map: Int32Array; retags: Record<"v4" | "v6", Retags> | null } {
  const nOld = from.tags.length;
  const nNew = Math.max(1, to.tags.length);
  const first = new Int32Array(nOld).fill(-1);
  const firstCount = new Float64Array(nOld);
  const others = new Map<number, number>();
  const listed: Record<"v4" | "v6", Retags> = { v4: { at: [], tags: [], from: [] }, v6: { at: [], tags: [], from: [] } };
  for (const fam of ["v4", "v6"] as const) {
    const a = from[fam].tags;
    const b = to[fam].tags;
    const l = listed[fam];
    forKeptRuns(al[fam], from[fam].length, (i, j, n) => {
      for (let k = 0; k < n; k++) {
        const o = a[i + k]!;
        const t = b[j + k]!;
        const f = first[o]!;
        if (f === t) firstCount[o] = firstCount[o]! + 1;
        else if (f === -1) {
          first[o] = t;
          firstCount[o] = 1;
        } else {
          const key = o * nNew + t;
          others.set(key, (others.get(key) ?? 0) + 1);
          l.at.push(j + k);
          l.tags.push(t);
          l.from.push(o);
        }
      }
    });
  }
  const map = first.slice();
  const best = firstCount;
  let moved = false;
  for (const [k, n] of others) {
    const o = Math.floor(k / nNew);
    const t = k % nNew;
    if (n > best[o]! || (n === best[o]! && t < map[o]!)) {
      best[o] = n;
      map[o] = t;
      moved = true;
    }
  }
  return { map, retags: moved ? null : listed };
}

/**
 * tagWalk's answer for a content an incremental build made from `from` (`built`, whose ranges
 * `al` was aligned in: alignSpliced), without walking every kept prefix: outside the ranges a
 * kept prefix's tag is the build's map of its parent tag (BuildChange.tagMap), so each parent
 * tag's count there is its count less its prefixes in the ranges, and only the kept prefixes in
 * the ranges are walked. The same map and retagged prefixes as tagWalk (the majority, ties to
 * the lower tag; the kept prefixes whose tag is not the map's, in order); null when a parent
 * tag's prefixes outside the ranges are not the map's majority (they would all be retagged:
 * tagWalk lists them).
 */
export function tagWalkSpliced(from: RevisionContent, to: RevisionContent, al: Alignment, built: BuildChange): ReturnType<typeof tagWalk> | null {
  const hint = built.tagMap;
  if (!hint || hint.map.length !== from.tags.length || hint.parentCounts.length !== from.tags.length) return null;
  const nOld = from.tags.length;
  const nNew = Math.max(1, to.tags.length);
  const outside = Float64Array.from(hint.parentCounts);
  const inside = new Map<number, number>();
  const pairs: Record<"v4" | "v6", { at: number[]; tags: number[]; from: number[] }> = {
    v4: { at: [], tags: [], from: [] },
    v6: { at: [], tags: [], from: [] },
  };
  for (const fam of ["v4", "v6"] as const) {
    const a = from[fam].tags;
    const b = to[fam].tags;
    const { removed, added } = al[fam];
    const p = pairs[fam];
    let r = 0;
    let q = 0;
    for (const c of built[fam]) {
      for (let i = c.from; i < c.to; i++) outside[a[i]!]!--;
      // The kept prefixes of the range: its old positions not removed, paired in order with its new ones not added.
      let i = c.from;
      let j = c.at;
      for (;;) {
        while (r < removed.length && removed[r]! < i) r++;
        while (q < added.length && added[q]! < j) q++;
        while (i < c.to && r < removed.length && removed[r] === i) {
          i++;
          r++;
        }
        while (j < c.at + c.count && q < added.length && added[q] === j) {
          j++;
          q++;
        }
        if (i >= c.to || j >= c.at + c.count) break;
        const key = a[i]! * nNew + b[j]!;
        inside.set(key, (inside.get(key) ?? 0) + 1);
        p.at.push(j);
        p.tags.push(b[j]!);
        p.from.push(a[i]!);
        i++;
        j++;
      }
    }
  }
  // The majority of each parent tag's kept prefixes, ties to the lower tag.
  const map = new Int32Array(nOld).fill(-1);
  const best = new Float64Array(nOld);
  const offer = (o: number, t: number, n: number) => {
    if (n > best[o]! || (n === best[o]! && n > 0 && t < map[o]!)) {
      best[o] = n;
      map[o] = t;
    }
  };
  for (let o = 0; o < nOld; o++) if (outside[o]! > 0 && hint.map[o]! >= 0) offer(o, hint.map[o]!, outside[o]!);
  for (const [key, n] of inside) offer(Math.floor(key / nNew), key % nNew, n);
  for (let o = 0; o < nOld; o++) if (outside[o]! > 0 && map[o] !== hint.map[o]) return null;
  const retags = {} as Record<"v4" | "v6", Retags>;
  for (const fam of ["v4", "v6"] as const) {
    const p = pairs[fam];
    const l: Retags = { at: [], tags: [], from: [] };
    p.at.forEach((j, k) => {
      if (map[p.from[k]!] !== p.tags[k]) {
        l.at.push(j);
        l.tags.push(p.tags[k]!);
        l.from.push(p.from[k]!);
      }
    });
    retags[fam] = l;
  }
  return { map, retags };
}

/**
 * The change that turns `from` into `to` (`al`: their alignment, when already walked; `built`:
 * how an incremental build made `to` from `from`, when it did, with `al` aligned in its ranges).
 */
export function makeChange(from: RevisionContent, to: RevisionContent, al: Alignment = alignContents(from, to), built?: BuildChange): RevisionChange {
  const { map, retags } = (built?.parent === from ? tagWalkSpliced(from, to, al, built) : null) ?? tagWalk(from, to, al);
  const family = (fam: "v4" | "v6"): FamilyChange => {
    const b = to[fam];
    const a = from[fam].tags;
    const bt = b.tags;
    // The retagged as tagWalk listed them, or walked for.
    const retagAt: number[] = retags?.[fam].at ?? [];
    const retagTags: number[] = retags?.[fam].tags ?? [];
    const retagFrom: number[] = retags?.[fam].from ?? [];
    if (!retags)
      forKeptRuns(al[fam], from[fam].length, (i, j, n) => {
        for (let k = 0; k < n; k++) {
          const t = bt[j + k]!;
          if (map[a[i + k]!] !== t) {
            retagAt.push(j + k);
            retagTags.push(t);
            retagFrom.push(a[i + k]!);
          }
        }
      });
    const added = al[fam].added;
    const removed = al[fam].removed;
    return {
      ...al[fam],
      length: b.length,
      addedPrefixes: Array.from(added, (j) => b.prefixAt(j)),
      addedTags: Uint32Array.from(added, (j) => b.tags[j]!),
      retagAt: Uint32Array.from(retagAt),
      retagTags: Uint32Array.from(retagTags),
      removedPrefixes: Array.from(removed, (i) => from[fam].prefixAt(i)),
      removedTags: Uint32Array.from(removed, (i) => a[i]!),
      retagPrefixes: retagAt.map((j) => b.prefixAt(j)),
      retagFrom: Uint32Array.from(retagFrom),
    };
  };
  return { modules: to.modules, tags: to.tags, map, v4: family("v4"), v6: family("v6"), parentCommunities: from.tags.map((t) => t.communities) };
}

/**
 * The content `change` makes of `parent`: kept prefixes are the parent's own strings, or, from a
 * compact parent (its table only), its parsed words, the added prefixes parsed beside them.
 */
export function applyChange(parent: RevisionContent, change: RevisionChange): RevisionContent {
  const owner = { modules: change.modules, tags: change.tags };
  const family = (old: RevisionFamily, c: FamilyChange) => {
    if (old.length - c.removed.length + c.added.length !== c.length) throw new Error("revision change does not fit its parent");
    const from = old.hasTexts ? null : old.table!;
    const prefixes = from ? null : new Array<string>(c.length);
    const texts = from ? null : old.texts();
    const table = from ? new PrefixTable(from.family, Math.max(1, c.length)) : null;
    const addedTable = from ? parsePrefixTexts(c.addedPrefixes)[from.family === 4 ? "v4" : "v6"] : null;
    if (addedTable && addedTable.count !== c.added.length) throw new Error("revision change adds a prefix of another family");
    const W = from?.W ?? 1;
    const tags = new Uint32Array(c.length);
    const map = change.map;
    let i = 0;
    let r = 0;
    let a = 0;
    for (let j = 0; j < c.length; j++) {
      if (a < c.added.length && c.added[a] === j) {
        if (table) {
          table.words.set(addedTable!.words.subarray(a * W, a * W + W), j * W);
          table.lens[j] = addedTable!.lens[a]!;
        } else prefixes![j] = c.addedPrefixes[a]!;
        tags[j] = c.addedTags[a]!;
        a++;
        continue;
      }
      while (r < c.removed.length && c.removed[r] === i) {
        r++;
        i++;
      }
      if (table) {
        for (let w = 0; w < W; w++) table.words[j * W + w] = from!.words[i * W + w]!;
        table.lens[j] = from!.lens[i]!;
      } else prefixes![j] = texts![i]!;
      // -1 (no tag kept) becomes 0xffffffff: a retag must cover it, which is checked below.
      tags[j] = map[old.tags[i]!]!;
      i++;
    }
    for (let k = 0; k < c.retagAt.length; k++) tags[c.retagAt[k]!] = c.retagTags[k]!;
    for (let j = 0; j < c.length; j++) if (tags[j]! >= change.tags.length) throw new Error("revision change leaves a prefix without a tag");
    if (table) table.count = c.length;
    return new RevisionFamily(prefixes, tags, owner, table);
  };
  return { ...owner, v4: family(parent.v4, change.v4), v6: family(parent.v6, change.v6) };
}

const splitTexts = (joined: string) => (joined === "" ? [] : joined.split(" "));

/** Ascending positions as the first, then the gaps: small numbers, which JSON and gzip keep short. */
const gaps = (xs: Uint32Array) => xs.map((x, k) => (k === 0 ? x : x - xs[k - 1]!)).join(",");
const ungap = (xs: number[]) => {
  const out = Uint32Array.from(xs);
  for (let k = 1; k < out.length; k++) out[k]! += out[k - 1]!;
  return out;
};

interface StoredFamily {
  length: number;
  removed: number[];
  added: { at: number[]; prefixes: string; tags: number[] };
  retag: { at: number[]; tags: number[]; prefixes?: string; from?: number[] };
  /** Absent in changes stored before it was kept (as `parent_communities`). */
  removed_entries?: { prefixes: string; tags: number[] };
}

interface StoredChange {
  format: 3;
  modules: string[];
  tags: [string[], number[]][];
  map: number[];
  parent_communities?: string[][];
  v4: StoredFamily;
  v6: StoredFamily;
}

/**
 * Stored form of a change (gzip'd JSON, format 3), packed as a whole content is
 * (revision-encoding.ts, format 2): prefixes one space-separated string, tags and positions
 * number lists, positions as gaps. The removed and retagged prefixes' texts and the parent's
 * communities were added to format 3 later, as fields a reader without them skips.
 */
export function encodeChange(c: RevisionChange): Buffer {
  const retagPrefixes = (f: FamilyChange) =>
    f.retagPrefixes && f.retagFrom ? `,"prefixes":${JSON.stringify(f.retagPrefixes.join(" "))},"from":[${f.retagFrom.join(",")}]` : "";
  const removedEntries = (f: FamilyChange) =>
    f.removedPrefixes && f.removedTags
      ? `,"removed_entries":{"prefixes":${JSON.stringify(f.removedPrefixes.join(" "))},"tags":[${f.removedTags.join(",")}]}`
      : "";
  const family = (f: FamilyChange) =>
    `{"length":${f.length},"removed":[${gaps(f.removed)}],"added":{"at":[${gaps(f.added)}],"prefixes":${JSON.stringify(f.addedPrefixes.join(" "))},"tags":[${f.addedTags.join(",")}]},"retag":{"at":[${gaps(f.retagAt)}],"tags":[${f.retagTags.join(",")}]${retagPrefixes(f)}}${removedEntries(f)}}`;
  const head = JSON.stringify({
    format: 3,
    modules: c.modules,
    tags: c.tags.map((t) => [t.communities, t.modules]),
    map: [...c.map],
    ...(c.parentCommunities ? { parent_communities: c.parentCommunities } : {}),
  });
  return gzipSync(`${head.slice(0, -1)},"v4":${family(c.v4)},"v6":${family(c.v6)}}`, { level: 1 });
}

export function decodeChange(data: Buffer): RevisionChange {
  const stored = JSON.parse(gunzipSync(data).toString("utf8")) as StoredChange;
  if (stored.format !== 3) throw new Error(`revision change format ${String(stored.format)} is not known`);
  const family = (f: StoredFamily): FamilyChange => ({
    length: f.length,
    removed: ungap(f.removed),
    added: ungap(f.added.at),
    addedPrefixes: f.added.prefixes === "" ? [] : f.added.prefixes.split(" "),
    addedTags: Uint32Array.from(f.added.tags),
    retagAt: ungap(f.retag.at),
    retagTags: Uint32Array.from(f.retag.tags),
    ...(f.removed_entries && f.retag.prefixes !== undefined && f.retag.from
      ? {
          removedPrefixes: splitTexts(f.removed_entries.prefixes),
          removedTags: Uint32Array.from(f.removed_entries.tags),
          retagPrefixes: splitTexts(f.retag.prefixes),
          retagFrom: Uint32Array.from(f.retag.from),
        }
      : {}),
  });
  return {
    modules: stored.modules,
    tags: stored.tags.map(([communities, modules]) => ({ communities, modules })),
    map: Int32Array.from(stored.map),
    v4: family(stored.v4),
    v6: family(stored.v6),
    ...(stored.parent_communities ? { parentCommunities: stored.parent_communities } : {}),
  };
}
