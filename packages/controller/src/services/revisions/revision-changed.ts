import { compareWords, type PrefixTable } from "@rlc/shared/prefix";
import { type Block, blockOf, FAMS, type Fam, GRANULE_SHIFT, lowerBound, normalize } from "./revision-blocks.js";

/*
 * What the changed modules' prefixes mark for an incremental rebuild (revision-incremental.ts):
 * each prefix a changed module has before or after the change only marks its block, and counts
 * in or out of the distinct collected prefixes when no other module holds it.
 */

/** One announcing module's part of the last build (revision-incremental.ts's BuildState). */
export interface ModuleState {
  /** Its distinct collected prefixes that pass the bogon filter, sorted. */
  raw: Record<Fam, PrefixTable>;
  /** The same with the pieces the filter left of the cut ones: what the build gets. */
  eff: Record<Fam, PrefixTable>;
  counts: { v4: number; v6: number };
  /** Its distinct collected prefixes that the filter drops or cuts, as keys. */
  bogonKeys: { v4: Set<string>; v6: Set<string> };
  /** Where `eff.v4` (which holds `raw.v4`) has prefixes (occupancyOf). */
  occupied: Uint32Array | null;
}

/**
 * The blocks (of `bits` per family) the prefixes the `changed` modules have before or after the
 * change only fall in, normalised; and how the distinct collected prefixes change with them.
 */
export function changedBlocks(
  before: readonly ModuleState[],
  after: readonly ModuleState[],
  changed: readonly number[],
  bits: Record<Fam, number>,
): { blocks: Record<Fam, Block[]>; rawDelta: number } {
  let rawDelta = 0;
  const blocks = {} as Record<Fam, Block[]>;
  for (const fam of FAMS) {
    const list: Block[] = [];
    // The modules as the walk sees them: those changed before the one walked already after the change.
    const current = before.slice();
    for (const mi of changed) {
      // Without bogon pieces a module's filtered prefixes are its raw ones (the same table): one walk.
      const effIsRaw = before[mi]!.eff[fam] === before[mi]!.raw[fam] && after[mi]!.eff[fam] === after[mi]!.raw[fam];
      const afterRaw = after[mi]!.raw[fam];
      const eff = new ChangedPrefixes(fam, mi, current, afterRaw, bits[fam], list, effIsRaw);
      eachDifference(before[mi]!.eff[fam], after[mi]!.eff[fam], eff);
      rawDelta += eff.rawDelta;
      if (!effIsRaw) {
        const raw = new ChangedPrefixes(fam, mi, current, afterRaw, bits[fam], null, true);
        eachDifference(before[mi]!.raw[fam], afterRaw, raw);
        rawDelta += raw.rawDelta;
      }
      current[mi] = after[mi]!;
    }
    blocks[fam] = normalize(list);
  }
  return { blocks, rawDelta };
}

/**
 * Walks two sorted distinct tables; `visitor.onlyOne` gets each prefix found in one of them
 * only. IPv4 compares the numbers in place (a changed module's tables are walked whole, before V8
 * has optimised the walk: a call a step was most of it). A visitor object of one class, not a
 * closure made for each walk: V8 compiled the walk with the closure it saw, and each refresh's new
 * closure threw that code away (a recompilation a refresh, more after a full build).
 */
function eachDifference(a: PrefixTable, b: PrefixTable, visitor: ChangedPrefixes) {
  const W = a.W;
  let i = 0;
  let j = 0;
  if (W === 1) {
    const aw = a.words;
    const bw = b.words;
    while (i < a.count && j < b.count) {
      const x = aw[i]!;
      const y = bw[j]!;
      const c = x !== y ? (x < y ? -1 : 1) : a.lens[i]! - b.lens[j]!;
      if (c === 0) {
        i++;
        j++;
      } else if (c < 0) visitor.onlyOne(a, i++);
      else visitor.onlyOne(b, j++);
    }
  }
  while (i < a.count || j < b.count) {
    const c = i >= a.count ? 1 : j >= b.count ? -1 : compareWords(a.words, i * W, b.words, j * W, W) || a.lens[i]! - b.lens[j]!;
    if (c === 0) {
      i++;
      j++;
    } else if (c < 0) visitor.onlyOne(a, i++);
    else visitor.onlyOne(b, j++);
  }
}

/**
 * What the prefixes one changed module `mi` has before or after the change only (its filtered
 * ones, `eff`, or its collected ones, `raw`) do: each filtered one marks its block (`blocks`),
 * and each collected one held by no other module counts in or out of the distinct prefixes
 * (`rawDelta`: +1 for one of `afterRaw`, -1 for one it had).
 */
class ChangedPrefixes {
  rawDelta = 0;
  constructor(
    private readonly fam: Fam,
    private readonly mi: number,
    /** The modules' states as the walk sees them: those changed before `mi` already after the change. */
    private readonly current: readonly ModuleState[],
    private readonly afterRaw: PrefixTable,
    private readonly blockBits: number,
    /** Where the blocks go; null when the walk is of the collected prefixes only. */
    private readonly blocks: Block[] | null,
    /** Whether the prefixes walked count for the distinct prefixes (the filtered ones are the collected ones). */
    private readonly countRaw: boolean,
  ) {}

  onlyOne(t: PrefixTable, i: number): void {
    if (this.blocks) this.blocks.push(blockOf(t.words, i * t.W, t.W, Math.min(t.lens[i]!, this.blockBits)));
    if (this.countRaw && !this.heldByAnother(t, i)) this.rawDelta += t === this.afterRaw ? 1 : -1;
  }

  /** Whether a module other than `mi` holds prefix i of `t`; its occupancy bit first (IPv4), tested here rather than in a call a module. */
  private heldByAnother(t: PrefixTable, i: number): boolean {
    const g = t.W === 1 ? t.words[i]! >>> GRANULE_SHIFT : -1;
    const current = this.current;
    for (let other = 0; other < current.length; other++) {
      if (other === this.mi) continue;
      const occupied = current[other]!.occupied;
      if (g >= 0 && occupied && (occupied[g >>> 5]! & (1 << (g & 31))) === 0) continue;
      if (has(current[other]!.raw[this.fam], t, i)) return true;
    }
    return false;
  }
}

/** Whether sorted distinct `t` holds prefix i of `s`. */
function has(t: PrefixTable, s: PrefixTable, i: number): boolean {
  const W = t.W;
  for (let k = lowerBound(t, s.words, false, 0, t.count, i * W); k < t.count && compareWords(t.words, k * W, s.words, i * W, W) === 0; k++) {
    if (t.lens[k] === s.lens[i]) return true;
  }
  return false;
}
