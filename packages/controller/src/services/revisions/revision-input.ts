import {
  compareWords,
  DEFAULT_EXCLUDE_PREFIXES,
  DEFAULT_MIN_PREFIX_LENGTH_V4,
  DEFAULT_MIN_PREFIX_LENGTH_V6,
  isSorted,
  lastAddress,
  newTables,
  PrefixTable,
  type PrefixTables,
  parsePrefixTexts,
  pushPrefixText,
  removeBogons,
  sortedPairs,
  type TaggedInput,
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
function isBogon(t: PrefixTable, i: number, min: number, holes: Holes, last: Uint32Array): boolean {
  if (t.lens[i]! < min) return true;
  const W = t.W;
  lastAddress(t.words, i * W, t.lens[i]!, W, last);
  for (let k = 0; k < holes.count; k++) {
    if (compareWords(holes.starts, k * W, last, 0, W) > 0) return false; // holes are ascending
    if (compareWords(holes.ends, k * W, t.words, i * W, W) >= 0) return true;
  }
  return false;
}

const keyOf = (t: PrefixTable, i: number) => `${t.family}:${t.words.subarray(i * t.W, i * t.W + t.W).join(".")}/${t.lens[i]}`;

/** One family of the filtered module prefixes: distinct (prefix, module) pairs, sorted. */
export interface ModulePairs {
  table: PrefixTable;
  /** The module index of each pair. */
  tags: Uint32Array;
}

export interface FilteredInput {
  /** What aggregateTagged gets: each module's texts without its bogons, plus what the cut left. */
  aggregateInputs: TaggedInput[];
  v4: ModulePairs;
  v6: ModulePairs;
  /** Distinct collected prefixes of all modules, bogons included (`input_prefix_count`). */
  distinct: number;
  /** Distinct collected prefixes the filter drops or cuts (`dropped_prefix_count`). */
  bogons: number;
  /** Distinct collected prefixes of each module, per family. */
  counts: { v4: number; v6: number }[];
  /** The pairs of v4 and v6 without the pieces (what `distinct` counts), and the pieces alone, sorted. */
  raw: { v4: ModulePairs; v6: ModulePairs };
  pieces: { v4: ModulePairs; v6: ModulePairs };
  /** Each module's distinct collected prefixes that the filter drops or cuts, as keys. */
  bogonKeys: { v4: Set<string>; v6: Set<string> }[];
}

/**
 * The revision's bogon filter over every module at once, and the module prefixes as
 * typed pairs for the attribution. Each collected text is parsed once; the bogon test is a
 * comparison with the few excluded ranges, and only the prefixes it touches (rare) go through
 * `removeBogons` for the pieces around the holes. Their distinct keys across modules make
 * `dropped_prefix_count` without a second filter pass over the union.
 */
export function filterModules(modules: readonly { community: string | null; prefixes: readonly string[] }[], bird: BogonSettings): FilteredInput {
  const exclude = bird.exclude_prefixes ?? DEFAULT_EXCLUDE_PREFIXES;
  const min = { v4: bird.min_prefix_length_v4 ?? DEFAULT_MIN_PREFIX_LENGTH_V4, v6: bird.min_prefix_length_v6 ?? DEFAULT_MIN_PREFIX_LENGTH_V6 };
  const excluded = parsePrefixTexts(exclude);
  const holes = { v4: holesOf(excluded.v4), v6: holesOf(excluded.v6) };
  const last = new Uint32Array(4);
  const total = modules.reduce((n, m) => n + m.prefixes.length, 0);
  const collected: PrefixTables = newTables(total, 1024);
  const moduleOf = { v4: new Uint32Array(total), v6: new Uint32Array(1024) };
  const bogonKeys = new Set<string>();
  const bogonCounts = modules.map(() => ({ v4: new Set<string>(), v6: new Set<string>() }));
  const pieces: PrefixTables = newTables();
  const pieceModule = { v4: [] as number[], v6: [] as number[] };
  const aggregateInputs: TaggedInput[] = [];

  modules.forEach((m, mi) => {
    let bogons: Set<string> | null = null;
    for (const text of m.prefixes) {
      const t = pushPrefixText(text, collected);
      const i = t.count - 1;
      const fam = t.family === 4 ? "v4" : "v6";
      if (isBogon(t, i, min[fam], holes[fam], last)) {
        const key = keyOf(t, i);
        bogonKeys.add(key);
        bogonCounts[mi]![fam].add(key);
        (bogons ??= new Set()).add(text);
        t.count--;
        continue;
      }
      if (moduleOf[fam].length < t.lens.length) {
        const grown = new Uint32Array(t.lens.length);
        grown.set(moduleOf[fam]);
        moduleOf[fam] = grown;
      }
      moduleOf[fam][i] = mi;
    }
    let kept = m.prefixes;
    if (bogons) {
      const cut = removeBogons([...bogons], { minLengthV4: min.v4, minLengthV6: min.v6, exclude }).prefixes;
      for (const p of cut) pieceModule[pushPrefixText(p, pieces).family === 4 ? "v4" : "v6"].push(mi);
      kept = [...m.prefixes.filter((p) => !bogons.has(p)), ...cut];
    }
    aggregateInputs.push({ prefixes: kept, communities: m.community ? [m.community] : [] });
  });

  let distinct = bogonKeys.size;
  const counts = modules.map((_, mi) => ({ v4: bogonCounts[mi]!.v4.size, v6: bogonCounts[mi]!.v6.size }));
  const pairsOf = (fam: "v4" | "v6"): ModulePairs => {
    const sorted = sortedPairs(collected[fam], moduleOf[fam], modules.length);
    const { table, tags } = sorted;
    for (let k = 0; k < table.count; k++) {
      counts[tags[k]!]![fam]++;
      if (k === 0 || table.lens[k] !== table.lens[k - 1] || compareWords(table.words, k * table.W, table.words, (k - 1) * table.W, table.W) !== 0) distinct++;
    }
    raw[fam] = pieces[fam].count ? { table: copyTable(sorted.table), tags: sorted.tags.slice() } : sorted;
    piecePairs[fam] = sortedPairs(pieces[fam], Uint32Array.from(pieceModule[fam]), modules.length);
    return withPieces(sorted, pieces[fam], pieceModule[fam], modules.length);
  };
  const raw = {} as FilteredInput["raw"];
  const piecePairs = {} as FilteredInput["pieces"];
  const v4 = pairsOf("v4");
  const v6 = pairsOf("v6");
  return { aggregateInputs, v4, v6, distinct, bogons: bogonKeys.size, counts, raw, pieces: piecePairs, bogonKeys: bogonCounts };
}

function copyTable(t: PrefixTable): PrefixTable {
  const out = new PrefixTable(t.family, t.count);
  out.words.set(t.words.subarray(0, t.count * t.W));
  out.lens.set(t.lens.subarray(0, t.count));
  out.count = t.count;
  return out;
}

/** The sorted pairs with the pieces that the bogon filter left of cut prefixes (rare). */
function withPieces(sorted: ModulePairs, pieces: PrefixTable, pieceModule: number[], moduleCount: number): ModulePairs {
  if (pieces.count === 0) return sorted;
  const all = sorted.table;
  const tags = new Uint32Array(all.count + pieces.count);
  tags.set(sorted.tags);
  for (let k = 0; k < pieces.count; k++) {
    all.push(pieces.words, k * pieces.W, pieces.lens[k]!);
    tags[all.count - 1] = pieceModule[k]!;
  }
  return sortedPairs(all, tags, moduleCount);
}

/** Distinct prefixes per family of some collected texts (a module outside the revision). */
export function countDistinct(prefixes: readonly string[]): { v4: number; v6: number } {
  const t = parsePrefixTexts(prefixes);
  return { v4: sortedPairs(t.v4, new Uint32Array(t.v4.count), 1).table.count, v6: sortedPairs(t.v6, new Uint32Array(t.v6.count), 1).table.count };
}
