import { comparePrefixes, newTables, type PrefixTables, parsePrefixTexts, pushPrefixText } from "@rlc/shared/prefix";
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
 * of a million prefixes parses some 20,000, not two million.
 */
function alignFamily(from: RevisionFamily, to: RevisionFamily, compare: (x: string, y: string) => number): FamilyAlignment {
  const a = from.prefixes;
  const b = to.prefixes;
  const removed: number[] = [];
  const added: number[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a[i]!;
    const y = b[j]!;
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
  while (i < a.length) removed.push(i++);
  while (j < b.length) added.push(j++);
  return { removed: Uint32Array.from(removed), added: Uint32Array.from(added) };
}

export function alignContents(from: RevisionContent, to: RevisionContent): Alignment {
  const compare = comparer();
  return { v4: alignFamily(from.v4, to.v4, compare), v6: alignFamily(from.v6, to.v6, compare) };
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

/** The length a prefix text ends with (`/24`); a bare address is a host route. */
function lengthOf(text: string, bits: number): number {
  const slash = text.lastIndexOf("/");
  if (slash < 0) return bits;
  let len = 0;
  for (let k = slash + 1; k < text.length; k++) len = len * 10 + text.charCodeAt(k) - 48;
  return len;
}

/**
 * withdrawnCount (the guard) from the alignment: a prefix `next` keeps covers itself, so only
 * the removed ones are checked against `next`, and of `next` only the prefixes shorter than the
 * longest removed one can cover one (a prefix of the same length would be the removed one
 * itself): those alone are parsed. Gives the same count as withdrawnCount.
 */
export function withdrawnFrom(current: RevisionContent, next: RevisionContent, al: Alignment): number {
  let count = 0;
  for (const fam of ["v4", "v6"] as const) {
    const removed = al[fam].removed;
    if (!removed.length) continue;
    const bits = fam === "v4" ? 32 : 128;
    const texts = Array.from(removed, (i) => current[fam].prefixes[i]!);
    let longest = 0;
    for (const t of texts) longest = Math.max(longest, lengthOf(t, bits));
    const covering = next[fam].prefixes.filter((t) => lengthOf(t, bits) < longest);
    count += covering.length ? uncovered(parsePrefixTexts(texts)[fam], parsePrefixTexts(covering)[fam]) : texts.length;
  }
  return count;
}
