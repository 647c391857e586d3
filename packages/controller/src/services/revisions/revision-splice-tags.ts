import { FAMS, type Fam } from "./revision-blocks.js";
import type { ContentSplice } from "./revision-build.js";
import type { RevisionTag } from "./revision-content.js";
import type { BlockPart } from "./revision-local.js";
import type { SplicedContent, SplicedFamily } from "./revision-spliced.js";

/*
 * The tags of a splice (revision-splice.ts): the new content numbers its tags in order of first
 * appearance, as the full build does. Where each old tag first appears among the kept prefixes
 * (from where it first appeared before, `firstAt`, a native search or one pass), where the parts
 * put theirs, the new numbers, and the kept prefixes' tags copied, fixed in place or renumbered.
 */

/** One tag of the new content: its key, where it first appears, and a tag it was made from. */
export interface TagEntry {
  key: string;
  first: number;
  tag: RevisionTag;
}

/**
 * The new content's tags as entries: old tag t is entry t (where it first appears among the kept
 * prefixes), then the parts' tags that are new; and each part's tags as entry numbers.
 */
export function tagEntries(
  old: SplicedContent,
  families: Record<Fam, SplicedFamily>,
  parts: Record<Fam, readonly BlockPart[]>,
  budget: { left: number },
): { entries: TagEntry[]; partEntries: Record<Fam, Uint32Array[]> } {
  const oldTags = old.content.tags;
  const entries: TagEntry[] = [];
  for (let t = 0; t < oldTags.length; t++) entries.push({ key: tagKey(oldTags[t]!), first: firstKept(old, families, t, budget), tag: oldTags[t]! });
  const unresolved: number[] = [];
  for (let t = 0; t < entries.length; t++) if (Number.isNaN(entries[t]!.first)) unresolved.push(t);
  if (unresolved.length) firstKeptByPass(old, families, entries, unresolved);
  const byKey = new Map<string, number>();
  for (let t = 0; t < entries.length; t++) byKey.set(entries[t]!.key, t);
  const partEntry = new Map<RevisionTag, number>();
  const partEntries = { v4: [] as Uint32Array[], v6: [] as Uint32Array[] };
  let base = 0;
  for (const fam of FAMS) {
    const list = parts[fam];
    for (let j = 0; j < list.length; j++) {
      const p = list[j]!;
      const at = base + families[fam].change[j]!.at;
      const ids = new Uint32Array(p.tags.length);
      for (let i = 0; i < ids.length; i++) {
        const tag = p.tags[i]!;
        let e = partEntry.get(tag);
        if (e === undefined) {
          const key = tagKey(tag);
          e = byKey.get(key);
          if (e === undefined) {
            e = entries.push({ key, first: Number.POSITIVE_INFINITY, tag }) - 1;
            byKey.set(key, e);
          }
          partEntry.set(tag, e);
        }
        if (at + i < entries[e]!.first) entries[e]!.first = at + i;
        ids[i] = e;
      }
      partEntries[fam].push(ids);
    }
    base += families[fam].length;
  }
  return { entries, partEntries };
}

/** The new numbers: in order of first appearance; an entry that appears nowhere is gone (-1). */
export function numberTags(entries: readonly TagEntry[]): { numberOf: Int32Array; tags: RevisionTag[]; firstAt: Float64Array } {
  const order: number[] = [];
  for (let e = 0; e < entries.length; e++) if (entries[e]!.first !== Number.POSITIVE_INFINITY) order.push(e);
  order.sort((a, b) => entries[a]!.first - entries[b]!.first);
  const numberOf = new Int32Array(entries.length).fill(-1);
  const tags: RevisionTag[] = [];
  const firstAt = new Float64Array(order.length);
  const communityArrays = new Map<string, string[]>();
  for (let k = 0; k < order.length; k++) {
    const e = order[k]!;
    const { tag, first } = entries[e]!;
    numberOf[e] = k;
    firstAt[k] = first;
    const joined = tag.communities.join(",");
    let communities = communityArrays.get(joined);
    if (!communities) communityArrays.set(joined, (communities = tag.communities));
    tags.push({ communities, modules: tag.modules });
  }
  return { numberOf, tags, firstAt };
}

/** How many prefixes each old tag keeps: its count less those of the replaced ranges. */
export function keptCounts(old: SplicedContent, families: Record<Fam, SplicedFamily>): Int32Array {
  const left = Int32Array.from(old.perTag);
  for (const fam of FAMS) {
    const tags = old.content[fam].tags;
    for (const c of families[fam].change) for (let i = c.from; i < c.to; i++) left[tags[i]!]!--;
  }
  return left;
}

/**
 * The family's new tag column: the kept runs' tags copied (renumbered when `tagNumbers` says
 * so), each part's written from its entries; the parts' prefixes counted in `perTag`.
 */
export function spliceTags(
  old: SplicedContent,
  fam: Fam,
  f: SplicedFamily,
  partEntries: readonly Uint32Array[],
  numberOf: Int32Array,
  oldMap: Int32Array,
  tagNumbers: TagNumbers,
  perTag: Int32Array,
): Uint32Array {
  const o = old.content[fam];
  const out = new Uint32Array(f.length);
  let from = 0;
  for (let j = 0; j < partEntries.length; j++) {
    const ids = partEntries[j]!;
    const c = f.change[j]!;
    keepTags(o.tags, from, c.from, out, c.at - (c.from - from), oldMap, tagNumbers);
    for (let i = 0; i < ids.length; i++) {
      const n = numberOf[ids[i]!]!;
      out[c.at + i] = n;
      perTag[n]!++;
    }
    from = c.to;
  }
  keepTags(o.tags, from, o.length, out, f.length - (o.length - from), oldMap, tagNumbers);
  return out;
}

/** Old tags [from, to) into `out` at `at`: copied, or renumbered one by one. */
function keepTags(tags: Uint32Array, from: number, to: number, out: Uint32Array, at: number, oldMap: Int32Array, tagNumbers: TagNumbers): void {
  if (to <= from) return;
  if (tagNumbers === "renumbered") renumber(tags, from, to, out, at, oldMap);
  else out.set(tags.subarray(from, to), at);
}

/**
 * How a splice numbered the kept prefixes' tags: copied as they were (no tag's number moved),
 * copied and the few prefixes of the tags that moved fixed in place (fixKept), or renumbered
 * one by one (renumber).
 */
export type TagNumbers = "kept" | "fixed" | "renumbered";

/**
 * At most this many moved tags (SpliceOptions.tagFixups), of at most FIXUP_PREFIXES kept
 * prefixes, are fixed in place: each a native search of the old tags (~0.4 ms over 1.2M), where
 * renumbering every kept prefix is a loop of 1.2M that a refresh runs cold (17-30 ms in the
 * controller; a 1 % change of one module typically moves a few tags of a few prefixes each).
 */
const TAG_FIXUPS = 8;
const FIXUP_PREFIXES = 16_384;

/**
 * Writes new number `to` over the kept prefixes of old tag t in `out` (the new family's tags,
 * copied from the old ones): found by native searches of the old tags, outside the replaced
 * ranges, moved by the ranges before them. Stops after `count` of them; answers how many.
 */
export function fixKept(tags: Uint32Array, length: number, change: readonly ContentSplice[], out: Uint32Array, t: number, to: number, count: number): number {
  let fixed = 0;
  let k = 0; // the first range that ends after i
  let i = count > 0 ? tags.indexOf(t) : -1;
  while (i >= 0 && i < length && fixed < count) {
    while (k < change.length && change[k]!.to <= i) k++;
    const c = change[k];
    if (c !== undefined && c.from <= i) {
      i = tags.indexOf(t, c.to);
      continue;
    }
    const before = k > 0 ? change[k - 1]! : null;
    out[i + (before ? before.at + before.count - before.to : 0)] = to;
    fixed++;
    i = tags.indexOf(t, i + 1);
  }
  return fixed;
}

/**
 * Where old tag t first appears in the new content among the kept prefixes (the new position,
 * IPv6 after IPv4), or +Infinity. From its first old prefix when that one is kept; else the
 * next old prefix of the tag outside the replaced ranges (a native search of the tags: a tag's
 * first prefix is rarely in a changed block).
 */
function firstKept(old: SplicedContent, families: Record<Fam, { change: ContentSplice[]; length: number }>, t: number, budget: { left: number }): number {
  const p = old.firstAt[t]!;
  const v4 = old.content.v4.length;
  let base = 0;
  for (const fam of FAMS) {
    const o = old.content[fam];
    const { change } = families[fam];
    // Where to look in this family: from its first prefix, or from the start when that is in IPv4.
    let i: number;
    if (fam === "v4") i = p < v4 ? p : -1;
    else i = p < v4 ? -2 : p - v4;
    if (i === -2 || p < 0) {
      if (budget.left-- <= 0) return Number.NaN;
      i = o.tags.indexOf(t);
    }
    while (i >= 0 && i < o.length) {
      // The last replaced range that starts at or before i.
      let lo = 0;
      let hi = change.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (change[mid]!.from <= i) lo = mid + 1;
        else hi = mid;
      }
      const c = lo > 0 ? change[lo - 1]! : null;
      if (c === null) return base + i;
      if (i >= c.to) return base + i + (c.at + c.count - c.to);
      if (budget.left-- <= 0) return Number.NaN;
      i = o.tags.indexOf(t, c.to);
    }
    base += families[fam].length;
  }
  return Number.POSITIVE_INFINITY;
}

/**
 * Searches of the old tags firstKept makes before the rest are found in one pass: each is
 * native but may run to the end of the tags (a tag whose only prefixes were replaced), so a
 * change that removes many tags' first prefixes walks the kept prefixes once instead.
 */
export const TAG_SEARCHES = 16;

/** firstKept of the `unresolved` old tags, in one walk of the kept prefixes (+Infinity for those that have none). */
function firstKeptByPass(old: SplicedContent, families: Record<Fam, { change: ContentSplice[]; length: number }>, entries: TagEntry[], unresolved: number[]) {
  const need = new Uint8Array(entries.length);
  for (const t of unresolved) {
    need[t] = 1;
    entries[t]!.first = Number.POSITIVE_INFINITY;
  }
  let left = unresolved.length;
  let base = 0;
  for (const fam of FAMS) {
    const tags = old.content[fam].tags;
    const length = old.content[fam].length;
    const { change } = families[fam];
    let from = 0;
    let shift = 0;
    for (let k = 0; k <= change.length && left > 0; k++) {
      const to = k < change.length ? change[k]!.from : length;
      for (let i = from; i < to && left > 0; i++) {
        const t = tags[i]!;
        if (need[t] === 1) {
          need[t] = 0;
          left--;
          entries[t]!.first = base + i + shift;
        }
      }
      if (k < change.length) {
        const c = change[k]!;
        from = c.to;
        shift = c.at + c.count - c.to;
      }
    }
    base += families[fam].length;
  }
}

/**
 * The tags of old prefixes [from, to) to position at of the new family, renumbered by `oldMap`.
 * No callback in the loop: one created per splice made V8 drop this function's optimised code
 * each time (the loop walks every kept prefix, 1.2M in a large tenant).
 */
function renumber(tags: Uint32Array, from: number, to: number, out: Uint32Array, at: number, oldMap: Int32Array): void {
  const shift = at - from;
  for (let i = from; i < to; i++) out[i + shift] = oldMap[tags[i]!]!;
}

export const tagKey = (t: RevisionTag) => `${t.communities.join(",")}|${t.modules.join(",")}`;

/**
 * The old tags whose number moves and that keep prefixes, and so how the splice numbers the
 * kept prefixes: a few such tags are fixed where they are, more renumber every kept prefix.
 */
export function tagNumbering(oldMap: Int32Array, left: Int32Array, tagFixups = TAG_FIXUPS): { moved: number[]; tagNumbers: TagNumbers } {
  const moved: number[] = [];
  let movedPrefixes = 0;
  for (let t = 0; t < oldMap.length; t++) {
    if (oldMap[t]! >= 0 && oldMap[t] !== t && left[t]! > 0) {
      moved.push(t);
      movedPrefixes += left[t]!;
    }
  }
  return { moved, tagNumbers: moved.length === 0 ? "kept" : moved.length <= tagFixups && movedPrefixes <= FIXUP_PREFIXES ? "fixed" : "renumbered" };
}
