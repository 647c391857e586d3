import { comparePrefixes, PrefixTable } from "@rlc/shared/prefix";
import { FAMS, type Fam, rangeIn } from "./revision-blocks.js";
import type { ContentSplice } from "./revision-build.js";
import { type RevisionContent, RevisionFamily, type RevisionTag } from "./revision-content.js";
import { type FamilyLines, joinLines, type LinesPiece, linesOf, suffixesOf } from "./revision-lines.js";
import type { BlockPart } from "./revision-local.js";

/** A revision's content with what an incremental rebuild keeps of it: its prefixes parsed, its digest's lines, how many prefixes each tag has. */
export interface SplicedContent {
  content: RevisionContent;
  tables: Record<Fam, PrefixTable>;
  lines: Record<Fam, FamilyLines>;
  perTag: Int32Array;
  /**
   * Where each tag's first prefix is (IPv4 positions, then IPv6 ones after the IPv4 count):
   * ascending, as tags are numbered in order of first appearance.
   */
  firstAt: Float64Array;
}

/** Where each tag of `content` first appears (SplicedContent.firstAt): one pass, made by the full build. */
export function firstAppearances(content: RevisionContent): Float64Array {
  const out = new Float64Array(content.tags.length).fill(-1);
  let seen = 0;
  let base = 0;
  for (const fam of FAMS) {
    const { tags, length } = content[fam];
    for (let i = 0; i < length && seen < out.length; i++) {
      if (out[tags[i]!]! < 0) {
        out[tags[i]!] = base + i;
        seen++;
      }
    }
    base += length;
  }
  return out;
}

export interface SpliceOptions {
  /** Searches for a tag's first kept prefix before one pass finds the rest (TAG_SEARCHES). */
  tagSearches?: number;
  /** Moved tags fixed in place at most before every kept prefix is renumbered (TAG_FIXUPS). */
  tagFixups?: number;
}

/** One tag of the new content: its key, where it first appears, and a tag it was made from. */
interface TagEntry {
  key: string;
  first: number;
  tag: RevisionTag;
}

/**
 * The last content with each block's inside replaced by the block's build (`parts`, sorted,
 * disjoint, per family). The kept ranges are copied as runs (parsed words, tags, the digest's
 * lines; the new content is compact: no text a prefix, see RevisionFamily); tags are numbered in
 * order of first appearance (IPv4, then IPv6) as the full build numbers them, found from where
 * each old tag first appeared (`firstAt`) and where the parts put theirs, without a walk of the
 * kept tags: when no tag's number moves (a change that makes no tag and removes no tag's first
 * prefix), the kept tags are copied as they are; when a few tags of a few prefixes move, copied
 * and those prefixes fixed in place (fixKept); else renumbered in one pass. The prefixes of
 * each new tag are counted from the old counts and the replaced ranges, and the ranges that
 * changed are named.
 */
export function spliceContent(
  old: SplicedContent,
  parts: Record<Fam, readonly BlockPart[]>,
  options: SpliceOptions = {},
): SplicedContent & { change: Record<Fam, ContentSplice[]>; tagMap: Int32Array; tagNumbers: TagNumbers } {
  // Each step is a function of its own: this runs once a refresh, and a change in what one step
  // sees had V8 recompile all of them together (~70 ms, traced with --trace-opt --trace-deopt).
  const families = { v4: spliceFamily(old, "v4", parts.v4), v6: spliceFamily(old, "v6", parts.v6) };
  const { entries, partEntries } = tagEntries(old, families, parts, { left: options.tagSearches ?? TAG_SEARCHES });
  const { numberOf, tags, firstAt } = numberTags(entries);
  // Old tag t is entry t: its new number, when it still appears.
  const oldMap = numberOf.subarray(0, old.content.tags.length);
  // The kept prefixes' counts: the old ones, less those of the replaced ranges.
  const left = keptCounts(old, families);
  // The old tags whose number moves and that keep prefixes: a few are fixed where they are, more renumber every kept prefix.
  const moved: number[] = [];
  let movedPrefixes = 0;
  for (let t = 0; t < oldMap.length; t++) {
    if (oldMap[t]! >= 0 && oldMap[t] !== t && left[t]! > 0) {
      moved.push(t);
      movedPrefixes += left[t]!;
    }
  }
  const tagNumbers: TagNumbers =
    moved.length === 0 ? "kept" : moved.length <= (options.tagFixups ?? TAG_FIXUPS) && movedPrefixes <= FIXUP_PREFIXES ? "fixed" : "renumbered";

  const perTag = new Int32Array(tags.length);
  const built = {
    v4: spliceTags(old, "v4", families.v4, partEntries.v4, numberOf, oldMap, tagNumbers, perTag),
    v6: spliceTags(old, "v6", families.v6, partEntries.v6, numberOf, oldMap, tagNumbers, perTag),
  };
  if (tagNumbers === "fixed") {
    for (const t of moved) {
      let fixed = 0;
      for (const fam of FAMS)
        fixed += fixKept(old.content[fam].tags, old.content[fam].length, families[fam].change, built[fam], t, oldMap[t]!, left[t]! - fixed);
    }
  }
  for (let t = 0; t < oldMap.length; t++) if (oldMap[t]! >= 0) perTag[oldMap[t]!]! += left[t]!;

  // The digest's lines: the kept runs' bytes, the parts' written with the new tags.
  const suffixes = suffixesOf(tags);
  const lines = { v4: spliceLines(old, "v4", families.v4, built.v4, suffixes), v6: spliceLines(old, "v6", families.v6, built.v6, suffixes) };
  const change = {
    v4: families.v4.change.filter((c) => !sameRange(old, "v4", c, families.v4.table, built.v4, tags)),
    v6: families.v6.change.filter((c) => !sameRange(old, "v6", c, families.v6.table, built.v6, tags)),
  };
  const owner = { modules: old.content.modules, tags };
  const content: RevisionContent = {
    ...owner,
    // Compact from the start (RevisionFamily): the prefixes' texts are written when asked for.
    v4: new RevisionFamily(null, built.v4, owner, families.v4.table),
    v6: new RevisionFamily(null, built.v6, owner, families.v6.table),
  };
  return { content, tables: { v4: families.v4.table, v6: families.v6.table }, lines, perTag, firstAt, change, tagMap: Int32Array.from(oldMap), tagNumbers };
}

/** One family of a splice: its prefixes (the kept runs and the parts' ones), the ranges replaced, its length. */
interface SplicedFamily {
  table: PrefixTable;
  change: ContentSplice[];
  length: number;
}

/** The family's prefixes with each part's block replaced by the part's: the kept runs copied as runs. */
function spliceFamily(old: SplicedContent, fam: Fam, parts: readonly BlockPart[]): SplicedFamily {
  const o = old.content[fam];
  const ot = old.tables[fam];
  const W = ot.W;
  const change: ContentSplice[] = [];
  let oi = 0;
  let n = 0;
  for (const p of parts) {
    const [lo, hi] = rangeIn(ot, p.block, true, oi);
    n += lo - oi;
    change.push({ from: lo, to: hi, at: n, count: p.table.count });
    n += p.table.count;
    oi = hi;
  }
  n += o.length - oi;
  const table = new PrefixTable(ot.family, Math.max(1, n));
  let from = 0;
  for (let j = 0; j < parts.length; j++) {
    const p = parts[j]!;
    const c = change[j]!;
    table.words.set(ot.words.subarray(from * W, c.from * W), (c.at - (c.from - from)) * W);
    table.lens.set(ot.lens.subarray(from, c.from), c.at - (c.from - from));
    table.words.set(p.table.words.subarray(0, c.count * W), c.at * W);
    table.lens.set(p.table.lens.subarray(0, c.count), c.at);
    from = c.to;
  }
  table.words.set(ot.words.subarray(from * W, o.length * W), (n - (o.length - from)) * W);
  table.lens.set(ot.lens.subarray(from, o.length), n - (o.length - from));
  table.count = n;
  return { table, change, length: n };
}

/**
 * The new content's tags as entries: old tag t is entry t (where it first appears among the kept
 * prefixes), then the parts' tags that are new; and each part's tags as entry numbers.
 */
function tagEntries(
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
function numberTags(entries: readonly TagEntry[]): { numberOf: Int32Array; tags: RevisionTag[]; firstAt: Float64Array } {
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
function keptCounts(old: SplicedContent, families: Record<Fam, SplicedFamily>): Int32Array {
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
function spliceTags(
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

/** The family's digest lines: the kept runs' lines as they were, the parts' written with the new tags, all at once. */
function spliceLines(old: SplicedContent, fam: Fam, f: SplicedFamily, tags: Uint32Array, suffixes: ReturnType<typeof suffixesOf>): FamilyLines {
  // Every part's lines written at once (a write a part made three arrays a block, thousands a rebuild).
  let total = 0;
  for (const c of f.change) total += c.count;
  const all = new PrefixTable(f.table.family, Math.max(1, total));
  const allTags = new Uint32Array(total);
  const W = f.table.W;
  let at = 0;
  for (const c of f.change) {
    all.words.set(f.table.words.subarray(c.at * W, (c.at + c.count) * W), at * W);
    all.lens.set(f.table.lens.subarray(c.at, c.at + c.count), at);
    allTags.set(tags.subarray(c.at, c.at + c.count), at);
    at += c.count;
  }
  all.count = total;
  const written = linesOf(all, allTags, suffixes);
  const pieces: LinesPiece[] = [];
  let oi = 0;
  at = 0;
  for (const c of f.change) {
    if (c.from > oi) pieces.push({ lines: old.lines[fam], from: oi, to: c.from });
    if (c.count > 0) pieces.push({ lines: written, from: at, to: at + c.count });
    at += c.count;
    oi = c.to;
  }
  if (old.content[fam].length > oi) pieces.push({ lines: old.lines[fam], from: oi, to: old.content[fam].length });
  return joinLines(pieces);
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
function fixKept(tags: Uint32Array, length: number, change: readonly ContentSplice[], out: Uint32Array, t: number, to: number, count: number): number {
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
const TAG_SEARCHES = 16;

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

const tagKey = (t: RevisionTag) => `${t.communities.join(",")}|${t.modules.join(",")}`;

/** Whether a replaced range holds what it held (the same prefixes, communities and modules). */
function sameRange(old: SplicedContent, fam: Fam, c: ContentSplice, table: PrefixTable, newTags: Uint32Array, tags: RevisionTag[]): boolean {
  if (c.to - c.from !== c.count) return false;
  const o = old.content[fam];
  const ot = old.tables[fam];
  for (let i = 0; i < c.count; i++) {
    if (comparePrefixes(ot, c.from + i, table, c.at + i) !== 0 || tagKey(o.tagAt(c.from + i)) !== tagKey(tags[newTags[c.at + i]!]!)) return false;
  }
  return true;
}
