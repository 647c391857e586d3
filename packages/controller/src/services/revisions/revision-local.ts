import { PrefixTable, parsePrefixTexts, prefixText } from "@rlc/shared/prefix";
import { type Block, blockText, coveringModules, covers, FAMS, type Fam, holds, lowerBound, rangeIn, type WideLayer } from "./revision-blocks.js";
import { type BogonSettings, buildRevisionWithState, type ModuleInput } from "./revision-build.js";
import type { RevisionTag } from "./revision-content.js";

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
  wide: Record<Fam, WideLayer>;
  /** The modules whose change is being rebuilt: their cover of each block is in its summary. */
  changed: readonly number[];
  /**
   * What the other modules give each block (the prefix texts of each module, the block's text
   * for each covering one), made once for the builds before and after the change.
   */
  same: Map<Block, { covering: readonly number[]; texts: (readonly string[])[] }>;
}

function textsIn(t: PrefixTable, b: Block): string[] {
  const [lo, hi] = rangeIn(t, b, false);
  const out = new Array<string>(hi - lo);
  for (let i = lo; i < hi; i++) out[i - lo] = prefixText(t, i);
  return out;
}

/**
 * Builds the blocks of both families at once; no two blocks of a family may touch (apart()).
 * Without `entries`, only the summaries are worked out.
 */
export function buildBlocks(blocks: Record<Fam, readonly Block[]>, modules: LocalModules, settings: BogonSettings, entries: boolean): Record<Fam, BlockPart[]> {
  const lists: (readonly string[])[][] = modules.meta.map(() => []);
  const isChanged = new Set(modules.changed);
  for (const fam of FAMS) {
    for (const b of blocks[fam]) {
      let same = modules.same.get(b);
      if (!same) {
        const texts = modules.tables.map((t, mi) => (isChanged.has(mi) ? [] : textsIn(t[fam], b)));
        modules.same.set(b, (same = { covering: coveringModules(modules.wide[fam], b), texts }));
      }
      const text = [blockText(b)];
      for (const mi of same.covering) lists[mi]!.push(text);
      same.texts.forEach((texts, mi) => {
        if (texts.length) lists[mi]!.push(texts);
      });
      for (const mi of modules.changed) lists[mi]!.push(textsIn(modules.tables[mi]![fam], b));
    }
  }
  const inputs = modules.meta.map((m, mi) => ({ ...m, prefixes: ([] as string[]).concat(...lists[mi]!) }));
  const part = buildRevisionWithState(inputs, settings, "none").built;
  const out = {} as Record<Fam, BlockPart[]>;
  for (const fam of FAMS) {
    const f = part.content[fam];
    // The build's own parse of what it gives (a content it builds always carries it).
    const table = f.table ?? parsePrefixTexts(f.texts())[fam];
    const W = table.W;
    let from = 0;
    out[fam] = blocks[fam].map((b) => {
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
      if (summary !== null) summary += `|${modules.changed.map((mi) => (covers(modules.tables[mi]![fam], b) ? 1 : 0)).join("")}`;
      if (!entries) return { block: b, tags: [], table: new PrefixTable(table.family, 1), summary };
      const inside = new PrefixTable(table.family, Math.max(1, hi - lo));
      inside.words.set(table.words.subarray(lo * W, hi * W));
      inside.lens.set(table.lens.subarray(lo, hi));
      inside.count = hi - lo;
      const tags: RevisionTag[] = [];
      for (let i = lo; i < hi; i++) tags.push(f.tagAt(i));
      return { block: b, tags, table: inside, summary };
    });
  }
  return out;
}
