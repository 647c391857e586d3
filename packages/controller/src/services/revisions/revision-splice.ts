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
}

/**
 * The last content with each block's inside replaced by the block's build (`parts`, sorted,
 * disjoint, per family). The kept ranges are copied as runs (parsed words, the digest's line
 * bytes; the new content is compact: no text a prefix, see RevisionFamily); only the tags go one by one, renumbered in order of first appearance
 * (IPv4, then IPv6) as the full build numbers them. The prefixes of each new tag are counted
 * from the old counts and the replaced ranges, and the ranges that changed are named.
 */
export function spliceContent(old: SplicedContent, parts: Record<Fam, readonly BlockPart[]>): SplicedContent & { change: Record<Fam, ContentSplice[]> } {
  const tags: RevisionTag[] = [];
  const index = new Map<string, number>();
  const communityArrays = new Map<string, string[]>();
  const tagFor = (t: RevisionTag): number => {
    const joined = t.communities.join(",");
    const key = tagKey(t);
    let k = index.get(key);
    if (k === undefined) {
      let communities = communityArrays.get(joined);
      if (!communities) communityArrays.set(joined, (communities = t.communities));
      index.set(key, (k = tags.push({ communities, modules: t.modules }) - 1));
    }
    return k;
  };
  const oldTags = old.content.tags;
  const oldMap = new Int32Array(oldTags.length).fill(-1);
  let partCount = 0;
  for (const fam of FAMS) for (const p of parts[fam]) partCount += p.tags.length;
  const perTag = new Int32Array(oldTags.length + partCount);
  const owner = { modules: old.content.modules, tags };
  const families = {} as Record<Fam, { tags: Uint32Array; table: PrefixTable; partTags: Uint32Array[]; change: ContentSplice[] }>;

  for (const fam of FAMS) {
    const o = old.content[fam];
    const ot = old.tables[fam];
    const W = ot.W;
    // Runs: [from, to) of the old family, or a part.
    const runs: ({ from: number; to: number } | BlockPart)[] = [];
    const change: ContentSplice[] = [];
    let oi = 0;
    let n = 0;
    for (const p of parts[fam]) {
      const [lo, hi] = rangeIn(ot, p.block, true, oi);
      runs.push({ from: oi, to: lo }, p);
      n += lo - oi;
      change.push({ from: lo, to: hi, at: n, count: p.table.count });
      n += p.table.count;
      oi = hi;
    }
    runs.push({ from: oi, to: o.length });
    n += o.length - oi;

    const out = new Uint32Array(n);
    const table = new PrefixTable(ot.family, Math.max(1, n));
    const partTags: Uint32Array[] = [];
    let k = 0;
    for (const run of runs) {
      if ("block" in run) {
        const nums = new Uint32Array(run.tags.length);
        for (let i = 0; i < nums.length; i++) {
          nums[i] = tagFor(run.tags[i]!);
          perTag[nums[i]!]!++;
        }
        out.set(nums, k);
        partTags.push(nums);
        table.words.set(run.table.words.subarray(0, run.table.count * W), k * W);
        table.lens.set(run.table.lens.subarray(0, run.table.count), k);
        k += nums.length;
        continue;
      }
      const { from, to } = run;
      if (from === to) continue;
      table.words.set(ot.words.subarray(from * W, to * W), k * W);
      table.lens.set(ot.lens.subarray(from, to), k);
      // Where a tag has no number yet, it is numbered and the run copied on from there.
      for (let i = copyRun(o.tags, from, to, out, k, oldMap); i < to; i = copyRun(o.tags, i, to, out, k + i - from, oldMap)) {
        oldMap[o.tags[i]!] = tagFor(oldTags[o.tags[i]!]!);
      }
      k += to - from;
    }
    table.count = n;
    families[fam] = { tags: out, table, partTags, change };
  }

  // The kept prefixes' counts: the old ones, less those of the replaced ranges.
  const left = Int32Array.from(old.perTag);
  for (const fam of FAMS) for (const c of families[fam].change) for (let i = c.from; i < c.to; i++) left[old.content[fam].tags[i]!]!--;
  oldMap.forEach((m, t) => {
    if (m >= 0) perTag[m]! += left[t]!;
  });

  // The digest's lines: the kept runs' bytes, the parts' written with the new tags.
  const suffixes = suffixesOf(tags);
  const lines = {} as Record<Fam, FamilyLines>;
  const change = {} as Record<Fam, ContentSplice[]>;
  for (const fam of FAMS) {
    const f = families[fam];
    const pieces: LinesPiece[] = [];
    let oi = 0;
    parts[fam].forEach((p, j) => {
      const c = f.change[j]!;
      pieces.push({ lines: old.lines[fam], from: oi, to: c.from });
      pieces.push({ lines: linesOf(p.table, f.partTags[j]!, suffixes), from: 0, to: p.table.count });
      oi = c.to;
    });
    pieces.push({ lines: old.lines[fam], from: oi, to: old.content[fam].length });
    lines[fam] = joinLines(pieces.filter((p) => p.to > p.from));
    change[fam] = f.change.filter((c) => !sameRange(old, fam, c, f.table, f.tags, tags));
  }
  const content: RevisionContent = {
    ...owner,
    // Compact from the start (RevisionFamily): the prefixes' texts are written when asked for.
    v4: new RevisionFamily(null, families.v4.tags, owner, families.v4.table),
    v6: new RevisionFamily(null, families.v6.tags, owner, families.v6.table),
  };
  return { content, tables: { v4: families.v4.table, v6: families.v6.table }, lines, perTag: perTag.subarray(0, tags.length), change };
}

/**
 * The tags of old prefixes [from, to) to position k of the new family, renumbered by `oldMap`,
 * up to the first whose tag has no number yet: its index, or `to` when the whole run was copied.
 * No callback in the loop: one created per splice made V8 drop this function's optimised code
 * each time (the loop walks every kept prefix, 1.2M in a large tenant).
 */
function copyRun(tags: Uint32Array, from: number, to: number, out: Uint32Array, k: number, oldMap: Int32Array): number {
  const shift = k - from;
  for (let i = from; i < to; i++) {
    const m = oldMap[tags[i]!]!;
    if (m < 0) return i;
    out[i + shift] = m;
  }
  return to;
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
