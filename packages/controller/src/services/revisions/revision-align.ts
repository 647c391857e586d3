import { comparePrefixes, newTables, PrefixTable, type PrefixTables, parsePrefixTexts, pushPrefixText } from "@rlc/shared/prefix";
import { lowerBound, maskTo } from "./revision-blocks.js";
import type { ContentSplice, RevisionChange } from "./revision-build.js";
import { type RevisionContent, type RevisionFamily, uncovered } from "./revision-content.js";

/**
 * Where two sorted lists of one family part: the positions of the old list's prefixes the new
 * one lacks and of the new list's prefixes the old one lacks, both ascending. Every other
 * prefix is in both, in the same order: the i-th kept prefix of the old list is the i-th kept
 * of the new. A stored change carries it (revision-change.ts); diff and guard walk it.
 */
export interface FamilyAlignment {
  removed: Uint32Array;
  added: Uint32Array;
}

export interface Alignment {
  v4: FamilyAlignment;
  v6: FamilyAlignment;
}

/** Orders two prefix texts of one family by address, then length. */
function comparer(): (x: string, y: string) => number {
  const a: PrefixTables = newTables(1, 1);
  const b: PrefixTables = newTables(1, 1);
  return (x, y) => {
    a.v4.count = a.v6.count = b.v4.count = b.v6.count = 0;
    const ta = pushPrefixText(x, a);
    const tb = pushPrefixText(y, b);
    return comparePrefixes(ta, 0, tb, 0);
  };
}

/**
 * One merge walk over both families' prefix texts. A prefix's text is canonical, so equal texts
 * are the same prefix and only where they differ are the two parsed to order them: a 1 % change
 * of a million prefixes parses some 20,000, not two million. Walks `a[i..iEnd)` against
 * `b[j..jEnd)`, pushing the positions apart to `removed` and `added`.
 */
function walk(
  a: (i: number) => string,
  i: number,
  iEnd: number,
  b: (j: number) => string,
  j: number,
  jEnd: number,
  compare: (x: string, y: string) => number,
  removed: number[],
  added: number[],
): void {
  while (i < iEnd && j < jEnd) {
    const x = a(i);
    const y = b(j);
    if (x === y) {
      i++;
      j++;
      continue;
    }
    const order = compare(x, y);
    if (order < 0) removed.push(i++);
    else if (order > 0) added.push(j++);
    else {
      i++;
      j++;
    }
  }
  while (i < iEnd) removed.push(i++);
  while (j < jEnd) added.push(j++);
}

/** Prefix i's text of a family: its own array's entry while it holds one (read without a call a prefix). */
function textsOf(f: RevisionFamily): (i: number) => string {
  if (f.hasTexts) {
    const texts = f.texts();
    return (i) => texts[i]!;
  }
  return (i) => f.prefixAt(i);
}

function alignFamily(from: RevisionFamily, to: RevisionFamily, compare: (x: string, y: string) => number): FamilyAlignment {
  const removed: number[] = [];
  const added: number[] = [];
  walk(textsOf(from), 0, from.length, textsOf(to), 0, to.length, compare, removed, added);
  return { removed: Uint32Array.from(removed), added: Uint32Array.from(added) };
}

export function alignContents(from: RevisionContent, to: RevisionContent): Alignment {
  // Two built contents carry their prefixes parsed: their words are compared, not their texts.
  const a = tablesOf(from);
  const b = tablesOf(to);
  if (a && b) return alignTables(a, b);
  const compare = comparer();
  return { v4: alignFamily(from.v4, to.v4, compare), v6: alignFamily(from.v6, to.v6, compare) };
}

/** A content's prefixes parsed, per family, in the content's order (a build's tables). */
export type ContentTables = { v4: PrefixTable; v6: PrefixTable };

/** A content's prefixes parsed, when a build made it (RevisionFamily.table; a content read back has none). */
export function tablesOf(c: RevisionContent): ContentTables | undefined {
  const { v4, v6 } = c;
  return v4.table?.count === v4.length && v6.table?.count === v6.length ? { v4: v4.table, v6: v6.table } : undefined;
}

/**
 * alignContents from both contents' prefixes parsed (`from` and `to`, the two builds' tables):
 * their words compared, not their texts. At 1.2M the texts' walk took 0.1 s in a fresh process
 * and 0.7 s in the controller (two strings, each a slice of another, read a comparison).
 */
export function alignTables(from: ContentTables, to: ContentTables): Alignment {
  const family = (a: PrefixTable, b: PrefixTable): FamilyAlignment => {
    const removed: number[] = [];
    const added: number[] = [];
    walkTables(a, 0, a.count, b, 0, b.count, removed, added);
    return { removed: Uint32Array.from(removed), added: Uint32Array.from(added) };
  };
  return { v4: family(from.v4, to.v4), v6: family(from.v6, to.v6) };
}

/** walk() over two parsed tables: `a[i..iEnd)` against `b[j..jEnd)` by their words. */
function walkTables(a: PrefixTable, i: number, iEnd: number, b: PrefixTable, j: number, jEnd: number, removed: number[], added: number[]): void {
  while (i < iEnd && j < jEnd) {
    const order = comparePrefixes(a, i, b, j);
    if (order === 0) {
      i++;
      j++;
    } else if (order < 0) removed.push(i++);
    else added.push(j++);
  }
  while (i < iEnd) removed.push(i++);
  while (j < jEnd) added.push(j++);
}

/**
 * alignContents of an incrementally built content and the one it was made from (`change`:
 * revision-build.ts), walked only inside the ranges the build replaced: outside them both hold
 * the same prefixes in the same order, all kept. Both lists are sorted and distinct, so the
 * alignment is the sets' difference, and a prefix of one range can only be in the other's (the
 * two lie between the same neighbours): the answer is alignContents' (the property test in
 * revision-incremental.test.ts).
 */
export function alignSpliced(to: RevisionContent, change: RevisionChange): Alignment {
  const compare = comparer();
  const family = (fam: "v4" | "v6"): FamilyAlignment => {
    const removed: number[] = [];
    const added: number[] = [];
    const pa = change.parent[fam];
    const pb = to[fam];
    const ta = pa.table?.count === pa.length ? pa.table : null;
    const tb = pb.table?.count === pb.length ? pb.table : null;
    if (ta && tb) for (const c of change[fam]) walkTables(ta, c.from, c.to, tb, c.at, c.at + c.count, removed, added);
    else {
      const a = textsOf(pa);
      const b = textsOf(pb);
      for (const c of change[fam]) walk(a, c.from, c.to, b, c.at, c.at + c.count, compare, removed, added);
    }
    return { removed: Uint32Array.from(removed), added: Uint32Array.from(added) };
  };
  return { v4: family("v4"), v6: family("v6") };
}

/**
 * Calls `fn(i, j)` for every prefix in both lists: `i` its position in the old one (of length
 * `oldLength`), `j` in the new one, in order.
 */
export function forKept(al: FamilyAlignment, oldLength: number, fn: (i: number, j: number) => void): void {
  const { removed, added } = al;
  let r = 0;
  let a = 0;
  let j = 0;
  for (let i = 0; i < oldLength; i++) {
    if (r < removed.length && removed[r] === i) {
      r++;
      continue;
    }
    while (a < added.length && added[a] === j) {
      a++;
      j++;
    }
    fn(i, j);
    j++;
  }
}

/**
 * Calls `fn(i, j, n)` for every run of `n` prefixes kept in both lists: old positions
 * `i..i+n)` are new `j..j+n)`. Runs are what lies between the alignment's entries, so a small
 * change of a long list is a few long runs, walked by the caller in tight loops.
 */
export function forKeptRuns(al: FamilyAlignment, oldLength: number, fn: (i: number, j: number, n: number) => void): void {
  const { removed, added } = al;
  let r = 0;
  let a = 0;
  let i = 0;
  let j = 0;
  for (;;) {
    while (r < removed.length && removed[r] === i) {
      r++;
      i++;
    }
    while (a < added.length && added[a] === j) {
      a++;
      j++;
    }
    if (i >= oldLength) return;
    const n = Math.min((r < removed.length ? removed[r]! : oldLength) - i, a < added.length ? added[a]! - j : oldLength);
    fn(i, j, n);
    i += n;
    j += n;
  }
}

/**
 * Where two built contents differ, as the ranges an incremental build names (ContentSplice): the
 * runs between kept prefixes, and each kept prefix whose communities differ. What a diff of the
 * two contents' section lines walks instead of every line (bundle-sections.ts): the alignment
 * by their parsed words costs tens of milliseconds at a million prefixes, where comparing every
 * line's text would write a million texts of a compact content first. Undefined when either
 * content has no parsed prefixes (a content made by hand).
 */
export function contentSplices(from: RevisionContent, to: RevisionContent): { v4: ContentSplice[]; v6: ContentSplice[] } | undefined {
  const a = tablesOf(from);
  const b = tablesOf(to);
  if (!a || !b) return undefined;
  const al = alignTables(a, b);
  // Whether two tags' communities read the same, decided once a pair.
  const nNew = Math.max(1, to.tags.length);
  const state = new Uint8Array(from.tags.length * nNew);
  const differ = (x: number, y: number): boolean => {
    const key = x * nNew + y;
    if (state[key] === 0) state[key] = from.tags[x]!.communities.join(",") === to.tags[y]!.communities.join(",") ? 1 : 2;
    return state[key] === 2;
  };
  const family = (fam: "v4" | "v6"): ContentSplice[] => {
    const out: ContentSplice[] = [];
    const ta = from[fam].tags;
    const tb = to[fam].tags;
    let pi = 0;
    let pj = 0;
    forKeptRuns(al[fam], from[fam].length, (i, j, n) => {
      if (i > pi || j > pj) out.push({ from: pi, to: i, at: pj, count: j - pj });
      for (let k = 0; k < n; k++) if (differ(ta[i + k]!, tb[j + k]!)) out.push({ from: i + k, to: i + k + 1, at: j + k, count: 1 });
      pi = i + n;
      pj = j + n;
    });
    if (pi < from[fam].length || pj < to[fam].length) out.push({ from: pi, to: from[fam].length, at: pj, count: to[fam].length - pj });
    return out;
  };
  return { v4: family("v4"), v6: family("v6") };
}

/** The prefixes of sorted `t` shorter than `len`, in order. */
function shorterThan(t: PrefixTable, len: number): PrefixTable {
  const W = t.W;
  let n = 0;
  for (let i = 0; i < t.count; i++) if (t.lens[i]! < len) n++;
  const out = new PrefixTable(t.family, Math.max(1, n));
  let k = 0;
  for (let i = 0; i < t.count; i++) {
    if (t.lens[i]! >= len) continue;
    for (let w = 0; w < W; w++) out.words[k * W + w] = t.words[i * W + w]!;
    out.lens[k++] = t.lens[i]!;
  }
  out.count = n;
  return out;
}

/** The length a prefix text ends with (`/24`); a bare address is a host route. */
function lengthOf(text: string, bits: number): number {
  const slash = text.lastIndexOf("/");
  if (slash < 0) return bits;
  let len = 0;
  for (let k = slash + 1; k < text.length; k++) len = len * 10 + text.charCodeAt(k) - 48;
  return len;
}

/**
 * How many of `removed`'s prefixes no prefix of `next` (sorted, distinct, parsed) contains, by
 * looking each one's shorter ancestors up in `next`: a binary search a length, not a walk over
 * `next`. Answers what uncovered(removed, next) answers when `next` lacks every prefix of
 * `removed` itself (a removed prefix is not in the next content).
 */
export function uncoveredByLookup(removed: PrefixTable, next: PrefixTable): number {
  const W = next.W;
  const at = new Uint32Array(W);
  let count = 0;
  for (let i = 0; i < removed.count; i++) {
    let covered = false;
    for (let len = 0; len < removed.lens[i]! && !covered; len++) {
      at.set(removed.words.subarray(i * W, i * W + W));
      maskTo(at, len);
      for (let k = lowerBound(next, at, false); k < next.count && !covered; k++) {
        let same = true;
        for (let w = 0; w < W && same; w++) same = next.words[k * W + w] === at[w];
        if (!same) break;
        covered = next.lens[k] === len;
      }
    }
    if (!covered) count++;
  }
  return count;
}

/**
 * withdrawnCount (the guard) from the alignment: a prefix `next` keeps covers itself, so only
 * the removed ones are checked against `next`, and of `next` only the prefixes shorter than the
 * longest removed one can cover one (a prefix of the same length would be the removed one
 * itself): those alone are parsed. `tables`: `next`'s prefixes parsed (an incremental build's,
 * BuiltRevision.change); with them a few removed prefixes are looked up in them instead
 * (uncoveredByLookup). Gives the same count as withdrawnCount.
 */
export function withdrawnFrom(current: RevisionContent, next: RevisionContent, al: Alignment, tables?: { v4: PrefixTable; v6: PrefixTable }): number {
  let count = 0;
  for (const fam of ["v4", "v6"] as const) {
    const removed = al[fam].removed;
    if (!removed.length) continue;
    const bits = fam === "v4" ? 32 : 128;
    const texts = Array.from(removed, (i) => current[fam].prefixAt(i));
    const table = tables?.[fam];
    // A lookup costs some `bits` binary searches a removed prefix; the walk, every prefix of `next`.
    if (table && table.count === next[fam].length && removed.length * bits * 4 < table.count) {
      count += uncoveredByLookup(parsePrefixTexts(texts)[fam], table);
      continue;
    }
    let longest = 0;
    for (const t of texts) longest = Math.max(longest, lengthOf(t, bits));
    // The prefixes of `next` shorter than the longest removed one: from its table where it has
    // one (no text written for a compact content), else from its texts.
    const covering =
      table && table.count === next[fam].length
        ? shorterThan(table, longest)
        : parsePrefixTexts(next[fam].texts().filter((t) => lengthOf(t, bits) < longest))[fam];
    count += covering.count ? uncovered(parsePrefixTexts(texts)[fam], covering) : texts.length;
  }
  return count;
}
