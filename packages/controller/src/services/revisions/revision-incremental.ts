import { compareWords, type PrefixTable } from "@rlc/shared/prefix";
import { apart, type Block, copyWide, FAMS, type Fam, normalize, occupancyOf, parentOf, setWide, type WideLayer, wideLayerOf } from "./revision-blocks.js";
import { type BogonSettings, type BuiltRevision, buildRevisionWithState, type ModuleInput } from "./revision-build.js";
import { changedBlocks, type ModuleState } from "./revision-changed.js";
import { digestOfGroups } from "./revision-digest.js";
import { type FilteredInput, filterEach } from "./revision-input.js";
import { type BlockPart, buildBlocks, type LocalModules } from "./revision-local.js";
import { firstAppearances, type SplicedContent, spliceContent, type TagNumbers } from "./revision-splice.js";

/*
 * A refresh that changes a few modules rebuilds only what they touched. The changed modules'
 * prefixes before and after are compared; each prefix in one of them only marks a block (its
 * IPv4 /20 or IPv6 /40, or the prefix itself when shorter). Each block is built alone from the
 * module prefixes inside it, a module with a shorter prefix that contains the block giving the
 * block itself (revision-local.ts: the covering layer, so that one short prefix of another
 * module does not make a block of everything under it). The block's inside is then the full
 * build's; when the block's summary (what its inside does to the block and above it) differs
 * before and after the change, the block is widened to its parent and built again. The insides
 * are spliced into the last content (revision-splice.ts), whose digest's bytes and groups are
 * kept, so that the rebuild costs the blocks, a copy of the arrays and a hash of the digest's
 * groups the blocks touch (revision-digest.ts). The
 * content, its encoding and its digest are byte for byte the full build's (the property tests
 * in revision-incremental.test.ts compare them on random module sets and edits).
 */

const BLOCK_BITS = { v4: 20, v6: 40 };

/**
 * What the last build of a tenant leaves for the next: its content with what the splice keeps
 * of it (SplicedContent: parsed prefixes, the digest's lines and groups, the tags' counts and
 * first appearances), and its modules' parts.
 */
export interface BuildState extends SplicedContent {
  /** Announcing module ids, ascending (the module indexes). */
  ids: string[];
  communities: (string | null)[];
  settingsKey: string;
  modules: ModuleState[];
  /** Distinct prefixes of all modules' `raw`. */
  rawDistinct: number;
  /** The covering layer, for the block lengths it was made for. */
  wide: Record<Fam, WideLayer>;
}

export interface Rebuilt {
  built: BuiltRevision;
  state: BuildState;
  /** Milliseconds of each step (the bench prints them). */
  phases: { filter: number; blocks: number; build: number; splice: number; digest: number };
  /** How many blocks were rebuilt, per family. */
  blocks: { v4: number; v6: number };
  /** How the kept prefixes' tags were numbered (spliceContent). */
  tagNumbers: TagNumbers;
}

export interface RebuildOptions {
  /** The block lengths (IPv4, IPv6). Tests use long ones to cross many. */
  blockBits?: { v4: number; v6: number };
  /** The splice's searches for a tag's first kept prefix before one pass finds the rest (spliceContent). Tests use 0 to take the pass. */
  tagSearches?: number;
  /** The moved tags the splice fixes in place before it renumbers every kept prefix (spliceContent). Tests use 0 to renumber. */
  tagFixups?: number;
}

const settingsKey = (s: BogonSettings) => JSON.stringify([s.min_prefix_length_v4 ?? null, s.min_prefix_length_v6 ?? null, s.exclude_prefixes ?? null]);
const byId = (a: { module_id: string }, b: { module_id: string }) => (a.module_id < b.module_id ? -1 : a.module_id > b.module_id ? 1 : 0);

function moduleStates(f: Pick<FilteredInput, "modules" | "counts" | "bogonKeys">): ModuleState[] {
  return f.modules.map((m, mi) => ({ raw: m.raw, eff: m.eff, counts: f.counts[mi]!, bogonKeys: f.bogonKeys[mi]!, occupied: occupancyOf(m.eff.v4) }));
}

const wideLayers = (states: readonly ModuleState[], bits: { v4: number; v6: number }): Record<Fam, WideLayer> => ({
  v4: wideLayerOf(
    states.map((s) => s.eff.v4),
    bits.v4,
  ),
  v6: wideLayerOf(
    states.map((s) => s.eff.v6),
    bits.v6,
  ),
});

/** The full build, and the state an incremental rebuild starts from (none when a module excludes). */
export function buildWithState(input: ModuleInput[], settings: BogonSettings): { built: BuiltRevision; state: BuildState | null } {
  const excludes = input.some((m) => m.action === "exclude");
  const { built, filtered, tables, lines, groups, perTag } = buildRevisionWithState(input, settings, excludes ? "text" : "lines");
  if (excludes || !lines || !groups) return { built, state: null };
  const modules = [...input].sort(byId);
  const states = moduleStates(filtered);
  return {
    built,
    state: {
      ids: modules.map((m) => m.module_id),
      communities: modules.map((m) => m.community),
      settingsKey: settingsKey(settings),
      modules: states,
      rawDistinct: filtered.distinct - filtered.bogons,
      wide: wideLayers(states, BLOCK_BITS),
      content: built.content,
      tables,
      lines,
      groups,
      perTag,
      firstAt: firstAppearances(built.content),
    },
  };
}

/**
 * Whether `t` has a prefix shorter than `bits`: a native search of its lengths for each length
 * below `bits` (a loop over a 60k module's lengths ran cold, ~20 ms a rebuild in the controller).
 */
function hasWide(t: PrefixTable, bits: number): boolean {
  const lens = t.lens.subarray(0, t.count);
  for (let len = 0; len < bits; len++) if (lens.indexOf(len) !== -1) return true;
  return false;
}

/**
 * The content and figures a full build of `input` gives, rebuilt from `state` (the last build's)
 * over the blocks the `changed` modules touch. Null when it does not apply (other modules,
 * communities or bogon settings, or an exclude module): the caller builds in full.
 */
export function rebuildRevision(
  state: BuildState,
  input: ModuleInput[],
  settings: BogonSettings,
  changed: ReadonlySet<string>,
  options: RebuildOptions = {},
): Rebuilt | null {
  if (input.some((m) => m.action === "exclude")) return null;
  const modules = [...input].sort(byId);
  if (modules.length !== state.ids.length || settingsKey(settings) !== state.settingsKey) return null;
  for (let mi = 0; mi < modules.length; mi++) {
    if (modules[mi]!.module_id !== state.ids[mi] || modules[mi]!.community !== state.communities[mi]) return null;
  }
  const bits = options.blockBits ?? BLOCK_BITS;
  const changedIdx = modules.map((m, mi) => (changed.has(m.module_id) ? mi : -1)).filter((mi) => mi >= 0);
  let mark = performance.now();
  const phases = { filter: 0, blocks: 0, build: 0, splice: 0, digest: 0 };
  const lap = (phase: keyof typeof phases) => {
    const now = performance.now();
    phases[phase] += now - mark;
    mark = now;
  };
  // The changed modules alone, without the pairs of every module the full build's attribution takes.
  const fresh = moduleStates(
    filterEach(
      changedIdx.map((mi) => modules[mi]!),
      settings,
    ),
  );
  const before = state.modules;
  const after = before.slice();
  changedIdx.forEach((mi, k) => {
    after[mi] = fresh[k]!;
  });

  lap("filter");
  // The covering layer, copied before it changes (the old state stays whole).
  let wide = state.wide;
  if (wide.v4.bits !== bits.v4 || wide.v6.bits !== bits.v6) {
    wide = wideLayers(before, bits);
  }
  for (const fam of FAMS) {
    if (!changedIdx.some((mi) => hasWide(before[mi]!.eff[fam], bits[fam]) || hasWide(after[mi]!.eff[fam], bits[fam]))) continue;
    if (wide[fam] === state.wide[fam]) wide = { ...wide, [fam]: copyWide(wide[fam]) };
    for (const mi of changedIdx) setWide(wide[fam], mi, before[mi]!.eff[fam], after[mi]!.eff[fam]);
  }

  // The blocks the changed prefixes fall in; the distinct count, a changed prefix at a time.
  const { blocks, rawDelta } = changedBlocks(before, after, changedIdx, bits);
  const rawDistinct = state.rawDistinct + rawDelta;

  lap("blocks");
  const meta = modules.map((m) => ({ module_id: m.module_id, name: m.name, community: m.community }));
  const same: LocalModules["same"] = new Map();
  const local = (states: ModuleState[]): LocalModules => ({
    meta,
    tables: states.map((s) => s.eff),
    occupied: states.map((s) => s.occupied),
    wide,
    changed: changedIdx,
    same,
  });
  const parts = buildAll(blocks, local(before), local(after), settings);
  lap("build");
  const spliced = spliceContent(state, parts, { tagSearches: options.tagSearches, tagFixups: options.tagFixups });
  lap("splice");
  const digest = digestOfGroups(spliced.groups.v4, spliced.groups.v6);
  lap("digest");
  const content = spliced.content;

  const announcedBy = new Int32Array(modules.length);
  content.tags.forEach((tag, k) => {
    for (const m of tag.modules) announcedBy[m]! += spliced.perTag[k]!;
  });
  const indexOf = new Map(modules.map((m, mi) => [m.module_id, mi]));
  const bogons = new Set<string>();
  for (const s of after) for (const fam of FAMS) for (const key of s.bogonKeys[fam]) bogons.add(key);
  const built: BuiltRevision = {
    content,
    digest,
    input_prefix_count: rawDistinct + bogons.size,
    dropped_prefix_count: bogons.size,
    modules: input.map((m) => ({
      module_id: m.module_id,
      name: m.name,
      community: m.community,
      prefix_count: announcedBy[indexOf.get(m.module_id)!]!,
      action: "announce",
      excluded_prefix_count: 0,
    })),
    collected: new Map(modules.map((m, mi) => [m.module_id, after[mi]!.counts])),
    change: { parent: state.content, ...spliced.change, tables: spliced.tables, tagMap: { map: spliced.tagMap, parentCounts: state.perTag } },
  };
  const blockCount = { v4: parts.v4.length, v6: parts.v6.length };
  return {
    built,
    state: {
      ...state,
      modules: after,
      rawDistinct,
      wide,
      content,
      tables: spliced.tables,
      lines: spliced.lines,
      groups: spliced.groups,
      perTag: spliced.perTag,
      firstAt: spliced.firstAt,
    },
    phases,
    blocks: blockCount,
    tagNumbers: spliced.tagNumbers,
  };
}

/**
 * Builds the blocks before and after the change until every block's summary is the same in
 * both (a block whose summary differs is widened to its parent): what each gives inside it.
 */
function buildAll(start: Record<Fam, Block[]>, before: LocalModules, after: LocalModules, settings: BogonSettings): Record<Fam, BlockPart[]> {
  const done: Record<Fam, BlockPart[]> = { v4: [], v6: [] };
  let pending = start;
  while (pending.v4.length || pending.v6.length) {
    const widened: Record<Fam, Block[]> = { v4: [], v6: [] };
    const groups = { v4: apart(pending.v4), v6: apart(pending.v6) };
    for (const g of [0, 1] as const) {
      const set = { v4: groups.v4[g], v6: groups.v6[g] };
      if (!set.v4.length && !set.v6.length) continue;
      const was = buildBlocks(set, before, settings, false);
      const now = buildBlocks(set, after, settings, true);
      for (const fam of FAMS) {
        now[fam].forEach((p, k) => {
          const same = p.summary !== null && p.summary === was[fam][k]!.summary;
          if (same || p.block.len === 0) done[fam].push(p);
          else widened[fam].push(parentOf(p.block));
        });
      }
    }
    for (const fam of FAMS) {
      if (!widened[fam].length) {
        pending = { ...pending, [fam]: [] };
        continue;
      }
      const all = normalize([...done[fam].map((p) => p.block), ...widened[fam]]);
      const kept = new Set(all);
      const grown = new Set(widened[fam]);
      done[fam] = done[fam].filter((p) => kept.has(p.block));
      pending = { ...pending, [fam]: all.filter((b) => grown.has(b)) };
    }
  }
  const W = { v4: 1, v6: 4 } as const;
  for (const fam of FAMS) done[fam].sort((x, y) => compareWords(x.block.start, 0, y.block.start, 0, W[fam]));
  return done;
}
