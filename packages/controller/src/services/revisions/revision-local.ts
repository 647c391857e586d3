import { PrefixTable, parsePrefixTexts, prefixText } from "@rlc/shared/prefix";
import {
  type Block,
  blockText,
  coveringModules,
  covers,
  FAMS,
  type Fam,
  GRANULE_SHIFT,
  holds,
  lowerBound,
  mayStartIn,
  rangeIn,
  type WideLayer,
} from "./revision-blocks.js";
import { type BogonSettings, buildRevisionWithState, type ModuleInput } from "./revision-build.js";
import type { RevisionFamily, RevisionTag } from "./revision-content.js";

/*
 * The build of a few address blocks alone (revision-incremental.ts). What the full build gives
 * strictly inside a block B depends only on the module prefixes inside B and on which modules
 * hold a prefix that contains B: those stand in as B itself. So the blocks are built from just
 * that. What the full build gives at B and above it depends on the inside only through the
 * block's summary: which of the changed modules cover all of B, and the entry the block's own
 * build gives for B itself (its communities say whether, and with what, B's inside merges into
 * B; its module ids which modules are attributed above B from inside). When the summary before
 * and after the change is the same, the full build's prefixes outside the blocks' insides are
 * the last build's.
 */

/** What the build of a block gives inside it, and its summary. */
export interface BlockPart {
  block: Block;
  /** The entries strictly inside the block (all of them for the whole space), in order: their tags and their prefixes parsed. */
  tags: RevisionTag[];
  table: PrefixTable;
  /** Null when the block's build gives a prefix that contains the block (it merged beyond it). */
  summary: string | null;
}

export interface LocalModules {
  /** Announcing modules, by index (ids ascending). */
  meta: readonly Omit<ModuleInput, "prefixes">[];
  /** Each module's prefixes after the bogon filter, the cut pieces included, sorted, per family. */
  tables: readonly Record<Fam, PrefixTable>[];
  /** Where each module's IPv4 table has prefixes (occupancyOf), when known. */
  occupied: readonly (Uint32Array | null)[];
  wide: Record<Fam, WideLayer>;
  /** The modules whose change is being rebuilt: their cover of each block is in its summary. */
  changed: readonly number[];
  /**
   * What the other modules give each block (the prefix texts of each module, the block's text
   * for each covering one), made once for the builds before and after the change.
   */
  same: Map<Block, SameInBlock>;
}

/** What the modules other than the changed ones give a block: those covering it, their prefix texts inside it, and its text. */
interface SameInBlock {
  covering: readonly number[];
  texts: (readonly string[])[];
  text: readonly string[];
}

/** The entries of a part built for its summary alone (never written to). */
const NO_ENTRIES = { v4: new PrefixTable(4, 1), v6: new PrefixTable(6, 1) };

/** No texts (never written to). */
const NONE: string[] = [];

function textsIn(t: PrefixTable, b: Block, occupied: Uint32Array | null | undefined): string[] {
  if (t.count === 0 || (t.W === 1 && !mayStartIn(occupied, b.start[0]!, b.last[0]!))) return NONE;
  const [lo, hi] = rangeIn(t, b, false);
  const out = new Array<string>(hi - lo);
  for (let i = lo; i < hi; i++) out[i - lo] = prefixText(t, i);
  return out;
}

/**
 * Builds the blocks of both families at once; no two blocks of a family may touch (apart()).
 * Without `entries`, only the summaries are worked out. Its loops are functions of their own
 * (inputsOf, partsOf): it runs several times a refresh on small inputs, and a loop here had V8
 * compile and recompile the whole of it (see revision-build.ts on buildRevisionWithState).
 */
export function buildBlocks(blocks: Record<Fam, readonly Block[]>, modules: LocalModules, settings: BogonSettings, entries: boolean): Record<Fam, BlockPart[]> {
  const part = buildRevisionWithState(inputsOf(blocks, modules), settings, "none").built;
  return { v4: partsOf("v4", blocks.v4, part.content.v4, modules, entries), v6: partsOf("v6", blocks.v6, part.content.v6, modules, entries) };
}

/** What the other modules give block `b` (SameInBlock), worked out once for the builds before and after the change. */
function sameIn(fam: Fam, b: Block, modules: LocalModules, isChanged: ReadonlySet<number>): SameInBlock {
  const texts = new Array<readonly string[]>(modules.tables.length);
  // The block's /20 when it is one (IPv4): a module's occupancy bit tested here, not a call a module.
  const g = fam === "v4" && b.start[0]! >>> GRANULE_SHIFT === b.last[0]! >>> GRANULE_SHIFT ? b.start[0]! >>> GRANULE_SHIFT : -1;
  for (let mi = 0; mi < texts.length; mi++) {
    const occupied = modules.occupied[mi];
    if (isChanged.has(mi) || (g >= 0 && occupied && (occupied[g >>> 5]! & (1 << (g & 31))) === 0)) texts[mi] = NONE;
    else texts[mi] = textsIn(modules.tables[mi]![fam], b, occupied);
  }
  return { covering: coveringModules(modules.wide[fam], b), texts, text: [blockText(b)] };
}

/** Each module's prefixes inside the blocks, the block itself for a module that covers it: the build's input. */
function inputsOf(blocks: Record<Fam, readonly Block[]>, modules: LocalModules): ModuleInput[] {
  const lists: (readonly string[])[][] = [];
  for (let mi = 0; mi < modules.meta.length; mi++) lists.push([]);
  const isChanged = new Set(modules.changed);
  for (const fam of FAMS) {
    for (const b of blocks[fam]) {
      let same = modules.same.get(b);
      if (!same) modules.same.set(b, (same = sameIn(fam, b, modules, isChanged)));
      for (const mi of same.covering) lists[mi]!.push(same.text);
      for (let mi = 0; mi < same.texts.length; mi++) if (same.texts[mi]!.length) lists[mi]!.push(same.texts[mi]!);
      for (const mi of modules.changed) lists[mi]!.push(textsIn(modules.tables[mi]![fam], b, modules.occupied[mi]));
    }
  }
  const inputs: ModuleInput[] = [];
  for (let mi = 0; mi < modules.meta.length; mi++) inputs.push({ ...modules.meta[mi]!, prefixes: ([] as string[]).concat(...lists[mi]!) });
  return inputs;
}

/** What the build `f` (of family `fam`) gives inside each block, and the block's summary. */
function partsOf(fam: Fam, blocks: readonly Block[], f: RevisionFamily, modules: LocalModules, entries: boolean): BlockPart[] {
  // The build's own parse of what it gives (a content it builds always carries it).
  const table = f.table ?? parsePrefixTexts(f.texts())[fam];
  const W = table.W;
  const out: BlockPart[] = [];
  let from = 0;
  for (const b of blocks) {
    const at = lowerBound(table, b.start, false, from);
    const [lo, hi] = rangeIn(table, b, true, at);
    from = hi;
    // The entry for b itself, or one that contains b (none, the blocks being apart; checked).
    let summary: string | null = "-";
    for (let i = at; i < lo && b.len > 0; i++) {
      if (table.lens[i]! < b.len) summary = null;
      else {
        const tag = f.tagAt(i);
        summary = `${tag.communities.join(",")}|${tag.modules.join(",")}`;
      }
    }
    if (at > 0 && b.len > 0 && holds(table, at - 1, b)) summary = null;
    if (summary !== null) {
      let covered = "";
      for (const mi of modules.changed) covered += covers(modules.tables[mi]![fam], b, modules.occupied[mi]) ? "1" : "0";
      summary += `|${covered}`;
    }
    if (!entries) {
      out.push({ block: b, tags: [], table: NO_ENTRIES[fam], summary });
      continue;
    }
    const inside = new PrefixTable(table.family, Math.max(1, hi - lo));
    inside.words.set(table.words.subarray(lo * W, hi * W));
    inside.lens.set(table.lens.subarray(lo, hi));
    inside.count = hi - lo;
    const tags: RevisionTag[] = [];
    for (let i = lo; i < hi; i++) tags.push(f.tagAt(i));
    out.push({ block: b, tags, table: inside, summary });
  }
  return out;
}
