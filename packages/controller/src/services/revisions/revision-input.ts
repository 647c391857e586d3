import {
  compareWords,
  DEFAULT_EXCLUDE_PREFIXES,
  DEFAULT_MIN_PREFIX_LENGTH_V4,
  DEFAULT_MIN_PREFIX_LENGTH_V6,
  formatPrefix,
  isSorted,
  lastAddress,
  mergedOrder,
  type ParsedPrefixes,
  PrefixError,
  PrefixList,
  PrefixTable,
  parsePrefixList,
  parsePrefixTexts,
  removeBogons,
  sortedDistinct,
  sortedPairs,
  tableOf,
} from "@rlc/shared/prefix";

export interface BogonSettings {
  min_prefix_length_v4?: number;
  min_prefix_length_v6?: number;
  exclude_prefixes?: string[];
}

/** Merged excluded ranges of one family: range k is [starts[k], ends[k]], ascending, disjoint. */
interface Holes {
  starts: Uint32Array;
  ends: Uint32Array;
  count: number;
}

function holesOf(table: PrefixTable): Holes {
  const W = table.W;
  const sorted = isSorted(table) ? table : sortedPairs(table, new Uint32Array(table.count), 1).table;
  const starts = new Uint32Array(sorted.count * W);
  const ends = new Uint32Array(sorted.count * W);
  const last = new Uint32Array(W);
  let count = 0;
  for (let i = 0; i < sorted.count; i++) {
    lastAddress(sorted.words, i * W, sorted.lens[i]!, W, last);
    // Nested in the range before (sorted by start: containers first): nothing to add.
    if (count > 0 && compareWords(last, 0, ends, (count - 1) * W, W) <= 0) continue;
    starts.set(sorted.words.subarray(i * W, i * W + W), count * W);
    ends.set(last, count * W);
    count++;
  }
  return { starts, ends, count };
}

/**
 * Whether prefix i of `t` is one the bogon filter touches: shorter than the minimum, or
 * overlapping an excluded range. Those are what `dropped_prefix_count` counts (dropped whole
 * or cut); every other prefix passes the filter unchanged.
 */
function isBogon(t: Packed, i: number, min: number, holes: Holes, last: Uint32Array): boolean {
  const len = t.lens[i]!;
  if (len < min) return true;
  if (t.W === 1) {
    // On numbers: most prefixes are IPv4, and each is compared with the holes below it.
    const start = t.words[i]!;
    const end = len === 32 ? start : start + (0xffffffff >>> len);
    for (let k = 0; k < holes.count; k++) {
      if (holes.starts[k]! > end) return false; // holes are ascending
      if (holes.ends[k]! >= start) return true;
    }
    return false;
  }
  const W = t.W;
  lastAddress(t.words, i * W, len, W, last);
  for (let k = 0; k < holes.count; k++) {
    if (compareWords(holes.starts, k * W, last, 0, W) > 0) return false;
    if (compareWords(holes.ends, k * W, t.words, i * W, W) >= 0) return true;
  }
  return false;
}

/**
 * The prefixes of `t` that isBogon holds for, ascending (most lists have none): for IPv4 its
 * test inlined, no call a prefix (the changed module of an incremental rebuild is filtered
 * before V8 has optimised anything: a call a prefix was ~10 ms of a 60k-prefix module's).
 */
function bogonsIn(t: Packed, min: number, holes: Holes, last: Uint32Array): number[] {
  const out: number[] = [];
  if (t.W !== 1) {
    for (let i = 0; i < t.count; i++) if (isBogon(t, i, min, holes, last)) out.push(i);
    return out;
  }
  const { words, lens } = t;
  const { starts, ends, count } = holes;
  for (let i = 0; i < t.count; i++) {
    const len = lens[i]!;
    if (len < min) {
      out.push(i);
      continue;
    }
    const start = words[i]!;
    const end = len === 32 ? start : start + (0xffffffff >>> len);
    for (let k = 0; k < count; k++) {
      if (starts[k]! > end) break;
      if (ends[k]! >= start) {
        out.push(i);
        break;
      }
    }
  }
  return out;
}

/** Prefixes as typed columns: a PrefixTable or a PrefixList. */
type Packed = Pick<PrefixTable, "W" | "words" | "lens" | "count">;

const keyOf = (t: Packed & { family: 4 | 6 }, i: number) => `${t.family}:${t.words.subarray(i * t.W, i * t.W + t.W).join(".")}/${t.lens[i]}`;

/** One family of the filtered module prefixes: distinct (prefix, module) pairs, sorted. */
export interface ModulePairs {
  table: PrefixTable;
  /** The module index of each pair. */
  tags: Uint32Array;
}

type Fam = "v4" | "v6";

/** One module's prefixes after the filter, each family sorted by address then length, distinct. */
export interface FilteredModule {
  /** Its collected prefixes that pass the filter. */
  raw: Record<Fam, PrefixTable>;
  /** The same with the pieces the filter left of the cut ones: what the aggregation gets. */
  eff: Record<Fam, PrefixTable>;
  /** `eff` as lists whose prefixes keep their collected texts (PrefixList.source), for aggregateTaggedLists. */
  lists: Record<Fam, PrefixList>;
}

export interface FilteredInput {
  modules: FilteredModule[];
  /** Every module's `eff` as (prefix, module) pairs: what the attribution gets. */
  v4: ModulePairs;
  v6: ModulePairs;
  /** Distinct collected prefixes of all modules, bogons included (`input_prefix_count`). */
  distinct: number;
  /** Distinct collected prefixes the filter drops or cuts (`dropped_prefix_count`). */
  bogons: number;
  /** Distinct collected prefixes of each module, per family. */
  counts: { v4: number; v6: number }[];
  /** Each module's distinct collected prefixes that the filter drops or cuts, as keys. */
  bogonKeys: { v4: Set<string>; v6: Set<string> }[];
}

/**
 * Parses a module's texts, each once (parsePrefixList: the texts tracked as their prefixes'
 * source, text k being all[offset + k]). A text that is not a prefix throws the error the
 * revision build always threw for it (parseCidr's, in mask mode), not the list parser's.
 */
function parseModule(texts: readonly string[], all: readonly string[], offset: number): ParsedPrefixes {
  let parsed: ParsedPrefixes;
  try {
    parsed = parsePrefixList(texts);
  } catch (error) {
    if (error instanceof PrefixError) parsePrefixTexts(texts);
    throw error;
  }
  for (const list of [parsed.v4, parsed.v6]) {
    const src = list.src!;
    if (offset > 0) for (let k = 0; k < list.count; k++) if (src[k]! >= 0) src[k]! += offset;
    list.source = all;
  }
  return parsed;
}

/** Drops prefixes `at` (ascending) of `list` in place, keeping the order: the runs between them moved natively. */
function dropAt(list: PrefixList, at: readonly number[]): void {
  const { words, lens, W } = list;
  const src = list.src!;
  let m = at[0]!;
  for (let k = 0; k < at.length; k++) {
    const from = at[k]! + 1;
    const to = k + 1 < at.length ? at[k + 1]! : list.count;
    if (to <= from) continue;
    words.copyWithin(m * W, from * W, to * W);
    lens.copyWithin(m, from, to);
    src.copyWithin(m, from, to);
    m += to - from;
  }
  list.count = m;
}

/** `a` then `b` in one list (the source of `a` kept; `b`'s prefixes get none). */
function joined(a: PrefixList, b: PrefixList): PrefixList {
  const out = new PrefixList(a.family, a.count + b.count);
  const src = out.trackSource(a.source ?? []);
  out.words.set(a.words.subarray(0, a.count * a.W));
  out.lens.set(a.lens.subarray(0, a.count));
  if (a.src) src.set(a.src.subarray(0, a.count));
  out.words.set(b.words.subarray(0, b.count * b.W), a.count * a.W);
  out.lens.set(b.lens.subarray(0, b.count), a.count);
  src.fill(-1, a.count, a.count + b.count);
  out.count = a.count + b.count;
  return out;
}

/** The pairs of every module's sorted distinct list, sorted by address, length, module: a merge. */
function pairsOf(family: 4 | 6, lists: readonly PrefixList[]): ModulePairs {
  const all = new PrefixList(
    family,
    Math.max(
      1,
      lists.reduce((n, l) => n + l.count, 0),
    ),
  );
  const moduleOf = new Uint32Array(all.lens.length);
  const runs: number[] = [];
  lists.forEach((l, mi) => {
    runs.push(all.count);
    all.words.set(l.words.subarray(0, l.count * l.W), all.count * all.W);
    all.lens.set(l.lens.subarray(0, l.count), all.count);
    moduleOf.fill(mi, all.count, all.count + l.count);
    all.count += l.count;
  });
  // Among equal prefixes the lower run, that is the lower module, comes first.
  const order = mergedOrder(all, runs);
  const table = new PrefixTable(family, Math.max(1, all.count));
  const tags = new Uint32Array(all.count);
  const W = all.W;
  for (let k = 0; k < order.length; k++) {
    const i = order[k]!;
    if (W === 1) table.words[k] = all.words[i]!;
    else table.words.set(all.words.subarray(i * 4, i * 4 + 4), k * 4);
    table.lens[k] = all.lens[i]!;
    tags[k] = moduleOf[i]!;
  }
  table.count = all.count;
  return { table, tags };
}

/** How many distinct prefixes a sorted table holds. */
function distinctIn(t: PrefixTable): number {
  let n = 0;
  for (let k = 0; k < t.count; k++) {
    if (k === 0 || t.lens[k] !== t.lens[k - 1] || compareWords(t.words, k * t.W, t.words, (k - 1) * t.W, t.W) !== 0) n++;
  }
  return n;
}

/**
 * The revision's bogon filter over every module at once, and the module prefixes parsed once
 * for everything after it: each module's sorted distinct prefixes (the aggregation's input,
 * which needs no sort then, and the incremental rebuild's state), and all modules' as
 * (prefix, module) pairs for the attribution, a merge of the modules' lists. The bogon test is
 * a comparison with the few excluded ranges, and only the prefixes it touches (rare) go
 * through `removeBogons` for the pieces around the holes. Their distinct keys across modules
 * make `dropped_prefix_count` without a second filter pass over the union.
 */
export function filterModules(modules: readonly { community: string | null; prefixes: readonly string[] }[], bird: BogonSettings): FilteredInput {
  const { modules: filtered, counts, bogonKeys: bogonCounts, bogons, anyPieces } = filterEach(modules, bird);
  const v4 = pairsOf(
    4,
    filtered.map((f) => f.lists.v4),
  );
  const v6 = pairsOf(
    6,
    filtered.map((f) => f.lists.v6),
  );
  let distinct = bogons.size;
  if (!anyPieces) distinct += distinctIn(v4.table) + distinctIn(v6.table);
  else {
    for (const fam of [4, 6] as const) {
      const key = fam === 4 ? "v4" : "v6";
      distinct += distinctIn(
        pairsOf(
          fam,
          filtered.map((f) => listOf(f.raw[key])),
        ).table,
      );
    }
  }
  return { modules: filtered, v4, v6, distinct, bogons: bogons.size, counts, bogonKeys: bogonCounts };
}

/**
 * filterModules' part of each module alone: its filtered prefixes, counts and bogon keys,
 * without the (prefix, module) pairs of all of them and their distinct count, which an
 * incremental rebuild, filtering only the changed modules, does not use.
 */
export function filterEach(
  modules: readonly { community: string | null; prefixes: readonly string[] }[],
  bird: BogonSettings,
): Pick<FilteredInput, "modules" | "counts" | "bogonKeys"> & { bogons: Set<string>; anyPieces: boolean } {
  const exclude = bird.exclude_prefixes ?? DEFAULT_EXCLUDE_PREFIXES;
  const min = { v4: bird.min_prefix_length_v4 ?? DEFAULT_MIN_PREFIX_LENGTH_V4, v6: bird.min_prefix_length_v6 ?? DEFAULT_MIN_PREFIX_LENGTH_V6 };
  const excluded = parsePrefixTexts(exclude);
  const holes = { v4: holesOf(excluded.v4), v6: holesOf(excluded.v6) };
  const last = new Uint32Array(4);
  // Every module's texts in one array: the source of every parsed list (see parseModule).
  const texts = ([] as string[]).concat(...modules.map((m) => (Array.isArray(m.prefixes) ? m.prefixes : Array.from(m.prefixes))));
  const bogonKeys = new Set<string>();
  const bogonCounts = modules.map(() => ({ v4: new Set<string>(), v6: new Set<string>() }));
  let offset = 0;
  let anyPieces = false;
  const filtered = modules.map((m, mi): FilteredModule => {
    const parsed = parseModule(m.prefixes, texts, offset);
    offset += m.prefixes.length;
    let bogons: string[] | null = null;
    for (const fam of ["v4", "v6"] as const) {
      const list = parsed[fam];
      const at = bogonsIn(list, min[fam], holes[fam], last);
      if (at.length === 0) continue;
      for (const i of at) {
        const key = keyOf(list, i);
        bogonKeys.add(key);
        bogonCounts[mi]![fam].add(key);
        (bogons ??= []).push(formatPrefix({ family: list.family, words: list.words.subarray(i * list.W, i * list.W + list.W), length: list.lens[i]! }));
      }
      dropAt(list, at);
    }
    const raw = { v4: sortedDistinct(parsed.v4), v6: sortedDistinct(parsed.v6) };
    let lists = raw;
    if (bogons) {
      // What the filter leaves of the cut prefixes: a function of the prefixes, whatever their texts.
      const cut = parsePrefixList(removeBogons(bogons, { minLengthV4: min.v4, minLengthV6: min.v6, exclude }).prefixes);
      if (cut.v4.count + cut.v6.count > 0) {
        anyPieces = true;
        lists = { v4: sortedDistinct(joined(raw.v4, cut.v4)), v6: sortedDistinct(joined(raw.v6, cut.v6)) };
      }
    }
    const rawTables = { v4: tableOf(raw.v4), v6: tableOf(raw.v6) };
    return { raw: rawTables, eff: lists === raw ? rawTables : { v4: tableOf(lists.v4), v6: tableOf(lists.v6) }, lists };
  });

  const counts = filtered.map((f, mi) => ({ v4: bogonCounts[mi]!.v4.size + f.raw.v4.count, v6: bogonCounts[mi]!.v6.size + f.raw.v6.count }));
  return { modules: filtered, counts, bogonKeys: bogonCounts, bogons: bogonKeys, anyPieces };
}

/** A table as a list (the same arrays), for pairsOf. */
function listOf(t: PrefixTable): PrefixList {
  const list = new PrefixList(t.family, 1);
  list.words = t.words;
  list.lens = t.lens;
  list.count = t.count;
  return list;
}

/** Distinct prefixes per family of some collected texts (a module outside the revision). */
export function countDistinct(prefixes: readonly string[]): { v4: number; v6: number } {
  const t = parsePrefixTexts(prefixes);
  return { v4: sortedPairs(t.v4, new Uint32Array(t.v4.count), 1).table.count, v6: sortedPairs(t.v6, new Uint32Array(t.v6.count), 1).table.count };
}
