import { aggregateTaggedLists, isSorted, type PrefixTable, type TaggedColumns } from "@rlc/shared/prefix";
import { splitExclusions } from "./exclusions.js";
import { attributeModules, maskModules } from "./revision-attribution.js";
import { type RevisionContent, RevisionFamily, type RevisionTag } from "./revision-content.js";
import { type DigestGroups, digestOf, digestOfGroups, groupsOf } from "./revision-digest.js";
import { type BogonSettings, countDistinct, type FilteredInput, filterModules } from "./revision-input.js";
import { type FamilyLines, linesOf, suffixesOf } from "./revision-lines.js";

export type { RevisionContent, RevisionEntry } from "./revision-content.js";
export { withdrawnCount } from "./revision-content.js";
export { type BogonSettings, countDistinct } from "./revision-input.js";

export interface ModuleInput {
  module_id: string;
  name: string;
  community: string | null;
  /** `exclude`: the module's prefixes are cut out of what the others announce (exclusions.ts). Default `announce`. */
  action?: "announce" | "exclude" | undefined;
  /** Collected prefix texts; duplicates and host bits are fine. */
  prefixes: readonly string[];
}

export interface BuiltRevision {
  content: RevisionContent;
  digest: string;
  input_prefix_count: number;
  dropped_prefix_count: number;
  modules: {
    module_id: string;
    name: string;
    community: string | null;
    prefix_count: number;
    action: "announce" | "exclude";
    excluded_prefix_count: number;
  }[];
  /** Distinct collected prefixes of each module per family, by module id (its snapshot counts). */
  collected: Map<string, { v4: number; v6: number }>;
  /** An incremental build's ranges of the revision it was made from that it replaced (revision-incremental.ts). */
  change?: RevisionChange;
}

/**
 * Prefixes [from, to) of the parent's family are replaced by [at, at + count) of the new one.
 * Between the ranges the two hold the same entries (prefix, communities, module ids) in the same
 * order; tag numbers may differ, as both are numbered in order of first appearance.
 */
export interface ContentSplice {
  from: number;
  to: number;
  at: number;
  count: number;
}

/** How an incrementally built revision differs from the one it was made from. */
export interface RevisionChange {
  parent: RevisionContent;
  v4: ContentSplice[];
  v6: ContentSplice[];
  /** The new content's prefixes parsed, per family (the guard looks removed prefixes up in them). */
  tables?: { v4: PrefixTable; v6: PrefixTable };
  /**
   * The new tag of each parent tag outside the ranges (-1: its entries are gone), and how many
   * prefixes each parent tag has: with the ranges, what a kept prefix's tag is without a walk
   * of every kept prefix (makeChange's tag map).
   */
  tagMap?: { map: Int32Array; parentCounts: Int32Array };
}

/** Tags by (communities, modules), shared by both families of one revision. */
function tagger(moduleCount: number, communities: TaggedColumns["communities"]) {
  const MW = Math.max(1, Math.ceil(moduleCount / 32));
  // Up to 32 modules the key is a number (set * 2^32 + mask): a string a prefix took ~70 ms on 1.2M.
  const index = new Map<number | string, number>();
  const tags: RevisionTag[] = [];
  return {
    tags,
    /** The tag of each announced prefix, given its community sets and module masks (attributeModules). */
    tagAll(sets: Int32Array, masks: Uint32Array): Uint32Array {
      const out = new Uint32Array(sets.length);
      let prev = -1; // neighbours share a tag in long runs: compare with the one before first
      for (let k = 0; k < sets.length; k++) {
        const cs = sets[k]!;
        if (prev >= 0 && cs === sets[prev] && sameMask(masks, k, prev, MW)) {
          out[k] = out[prev]!;
          prev = k;
          continue;
        }
        const key = MW === 1 ? cs * 4_294_967_296 + masks[k]! : `${cs}:${masks.subarray(k * MW, k * MW + MW).join(",")}`;
        let tag = index.get(key);
        if (tag === undefined) {
          index.set(key, (tag = tags.length));
          tags.push({ communities: communities[cs] as string[], modules: maskModules(masks, k, moduleCount) });
        }
        out[k] = tag;
        prev = k;
      }
      return out;
    },
  };
}

function sameMask(masks: Uint32Array, a: number, b: number, MW: number): boolean {
  for (let w = 0; w < MW; w++) if (masks[a * MW + w] !== masks[b * MW + w]) return false;
  return true;
}

/**
 * Builds a revision's content from the modules' collected prefixes: the exclude modules join the
 * bogon filter's holes (exclusions.ts), the bogon filter first
 * (revision-input.ts), then the community-aware aggregation of the prefix algebra, then the
 * attribution of modules to the announced prefixes (revision-attribution.ts). Measured on 1.2M
 * collected prefixes in 3 modules (the bench): ~2 s, half of it aggregateTagged; it was 8.8 s
 * with three removeBogons passes, a union pass and the Map-of-Sets attribution, and ~1 GB of
 * objects.
 */
/** What an incremental rebuild starts from (revision-incremental.ts), besides the revision. */
export interface BuildExtras {
  filtered: FilteredInput;
  bird: BogonSettings;
  /** The announced prefixes of each family, parsed. */
  tables: { v4: PrefixTable; v6: PrefixTable };
  /** How many prefixes each tag has. */
  perTag: Int32Array;
  /** The digest's lines of each family (revision-lines.ts), when asked for. */
  lines: { v4: FamilyLines; v6: FamilyLines } | null;
  /** The digest's groups of each family (revision-digest.ts), with the lines. */
  groups: { v4: DigestGroups; v6: DigestGroups } | null;
}

/**
 * buildRevision, with what an incremental rebuild starts from. `digest`: "lines" keeps the
 * digest's bytes; "none" leaves the digest empty (the build of a few blocks, which has none).
 */
export function buildRevisionWithState(
  input: ModuleInput[],
  settings: BogonSettings = {},
  digest: "text" | "lines" | "none" = "text",
): { built: BuiltRevision } & BuildExtras {
  const exclusions = splitExclusions(input, settings);
  const bird = exclusions.bird;
  // Module indexes follow the ids' order, so each prefix's module_ids come out sorted.
  const modules = [...exclusions.announce].sort((a, b) => (a.module_id < b.module_id ? -1 : a.module_id > b.module_id ? 1 : 0));
  const filtered = filterModules(modules, bird);
  // The filter's lists, parsed once and sorted, with the texts they were parsed from.
  const announced = aggregateTaggedLists(
    filtered.modules.map((f, mi) => ({ communities: modules[mi]!.community ? [modules[mi]!.community!] : [], ...f.lists })),
  );

  const t = tagger(modules.length, announced.communities);
  const owner = { modules: modules.map((m) => m.module_id), tags: t.tags };
  const familyOf = (fam: "v4" | "v6") => {
    const { prefixes, table, sets } = announced[fam];
    if (!isSorted(table)) throw new Error("aggregateTagged returned prefixes out of address order");
    const pairs = filtered[fam];
    return new RevisionFamily(prefixes, t.tagAll(sets, attributeModules(pairs.table, pairs.tags, table, modules.length)), owner, table);
  };
  const content: RevisionContent = { ...owner, v4: familyOf("v4"), v6: familyOf("v6") };
  const tables = { v4: announced.v4.table, v6: announced.v6.table };

  const perTag = tagCounts(t.tags.length, content.v4.tags, content.v6.tags);
  let lines: BuildExtras["lines"] = null;
  let groups: BuildExtras["groups"] = null;
  if (digest === "lines") {
    const suffixes = suffixesOf(t.tags);
    lines = { v4: linesOf(tables.v4, content.v4.tags, suffixes), v6: linesOf(tables.v6, content.v6.tags, suffixes) };
    groups = { v4: groupsOf(tables.v4, lines.v4), v6: groupsOf(tables.v6, lines.v6) };
  }
  const built: BuiltRevision = {
    content,
    digest: groups ? digestOfGroups(groups.v4, groups.v6) : digest === "none" ? "" : digestOf(content),
    input_prefix_count: filtered.distinct,
    dropped_prefix_count: filtered.bogons,
    modules: moduleFigures(input, modules, t.tags, perTag, exclusions.excluded),
    collected: collectedCounts(input, modules, filtered.counts),
  };
  return { built, filtered, bird, tables, lines, groups, perTag };
}

/*
 * The loops over a build's prefixes, tags and modules are functions of their own, apart from
 * buildRevisionWithState, which only calls: the full build runs it once over a million prefixes
 * and an incremental one runs it several times over a few blocks, with objects of other shapes.
 * A loop inside it had V8 compile the whole function on the stack (OSR) in one and deoptimise
 * it in the other, and an incremental refresh after a full one paid ~20 ms of recompilation
 * for it each time (bench/refresh-apply.mjs, traced with --trace-opt --trace-deopt).
 */

/** How many prefixes each of `count` tags has in the families' tag columns. */
function tagCounts(count: number, v4: ArrayLike<number>, v6: ArrayLike<number>): Int32Array {
  const perTag = new Int32Array(count);
  for (let i = 0; i < v4.length; i++) perTag[v4[i]!]!++;
  for (let i = 0; i < v6.length; i++) perTag[v6[i]!]!++;
  return perTag;
}

/** Each input module's line of the build: its prefixes announced (its tags' counts) or excluded. */
function moduleFigures(
  input: readonly ModuleInput[],
  announcing: readonly ModuleInput[],
  tags: readonly RevisionTag[],
  perTag: Int32Array,
  excluded: ReadonlyMap<string, number>,
): BuiltRevision["modules"] {
  const announcedBy = new Int32Array(announcing.length);
  for (let k = 0; k < tags.length; k++) for (const m of tags[k]!.modules) announcedBy[m]! += perTag[k]!;
  const indexOf = new Map<string, number>();
  for (let mi = 0; mi < announcing.length; mi++) indexOf.set(announcing[mi]!.module_id, mi);
  const out: BuiltRevision["modules"] = [];
  for (const m of input) {
    const mi = indexOf.get(m.module_id);
    out.push({
      module_id: m.module_id,
      name: m.name,
      community: m.community,
      prefix_count: mi === undefined ? 0 : announcedBy[mi]!,
      action: m.action ?? "announce",
      excluded_prefix_count: excluded.get(m.module_id) ?? 0,
    });
  }
  return out;
}

/** The distinct prefixes collected per module: the exclude modules' first, then the announcing ones'. */
function collectedCounts(
  input: readonly ModuleInput[],
  announcing: readonly ModuleInput[],
  counts: readonly { v4: number; v6: number }[],
): BuiltRevision["collected"] {
  const out: BuiltRevision["collected"] = new Map();
  for (const m of input) if (m.action === "exclude") out.set(m.module_id, countDistinct(m.prefixes));
  for (let mi = 0; mi < announcing.length; mi++) out.set(announcing[mi]!.module_id, counts[mi]!);
  return out;
}

export function buildRevision(input: ModuleInput[], settings: BogonSettings = {}): BuiltRevision {
  return buildRevisionWithState(input, settings).built;
}
