import { comparePrefixes, PrefixTable } from "@rlc/shared/prefix";
import { FAMS, type Fam, rangeIn } from "./revision-blocks.js";
import type { ContentSplice } from "./revision-build.js";
import { type RevisionContent, RevisionFamily, type RevisionTag } from "./revision-content.js";
import { regroup } from "./revision-digest.js";
import { type FamilyLines, joinLines, type LinesPiece, linesOf, suffixesOf } from "./revision-lines.js";
import type { BlockPart } from "./revision-local.js";
import { fixKept, keptCounts, numberTags, spliceTags, TAG_SEARCHES, type TagNumbers, tagEntries, tagKey, tagNumbering } from "./revision-splice-tags.js";
import type { SplicedContent, SplicedFamily } from "./revision-spliced.js";

export type { TagNumbers } from "./revision-splice-tags.js";
export { firstAppearances, type SplicedContent } from "./revision-spliced.js";

export interface SpliceOptions {
  /** Searches for a tag's first kept prefix before one pass finds the rest (TAG_SEARCHES). */
  tagSearches?: number;
  /** Moved tags fixed in place at most before every kept prefix is renumbered (TAG_FIXUPS). */
  tagFixups?: number;
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
  const { moved, tagNumbers } = tagNumbering(oldMap, left, options.tagFixups);

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
  // The digest's groups: those the replaced ranges touch hashed again, the others kept.
  const groups = {
    v4: regroup(old.groups.v4, old.tables.v4, families.v4.table, lines.v4, families.v4.change),
    v6: regroup(old.groups.v6, old.tables.v6, families.v6.table, lines.v6, families.v6.change),
  };
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
  return {
    content,
    tables: { v4: families.v4.table, v6: families.v6.table },
    lines,
    groups,
    perTag,
    firstAt,
    change,
    tagMap: Int32Array.from(oldMap),
    tagNumbers,
  };
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
