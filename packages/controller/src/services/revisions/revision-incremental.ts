import { compareWords, formatPrefix, lastAddress, PrefixTable, parsePrefixTexts } from "@rlc/shared/prefix";
import { Blocks, keyOf, maskTo, wideKeys, widen } from "./revision-blocks.js";
import { type BogonSettings, type BuiltRevision, buildRevision, buildRevisionWithState, type ModuleInput } from "./revision-build.js";
import { digestOf, type RevisionContent, RevisionFamily, type RevisionTag } from "./revision-content.js";
import { filterModules, type ModulePairs } from "./revision-input.js";

/*
 * A refresh that changes a few modules rebuilds only what they touched. The build (revision-
 * build.ts) is local in the address space: the announced prefixes and their attribution inside
 * an aligned block B depend only on the module prefixes inside B, as long as no module prefix
 * and no announced prefix is shorter than B and overlaps it, and the block's own result is not
 * the single prefix B (which could merge with its sibling block). So the rebuild takes the
 * blocks (an IPv4 /20, an IPv6 /40) the changed modules' prefixes fall in, widens each until
 * those conditions hold, builds just those blocks from every module's prefixes inside them, and
 * splices the result into the last content in place of what it held there. Tags are renumbered
 * in first-appearance order, as the full build numbers them, so the content, its encoding and
 * its digest are byte for byte the full build's (the property test in
 * revision-incremental.test.ts compares them on random module sets and edits).
 */

type Fam = "v4" | "v6";
/**
 * An IPv4 /20 and an IPv6 /40 by default: a CDN feed's 1% change touches a few hundred blocks,
 * each holding a handful of every module's prefixes; a wider module prefix over one widens it.
 */
const BLOCK_BITS = { v4: 20, v6: 40 };
const FAMS: Fam[] = ["v4", "v6"];

/** What the last build of a tenant leaves for the next: its inputs' filtered pairs and its content. */
export interface BuildState {
  /** Announcing module ids, ascending (the module indexes). */
  ids: string[];
  communities: (string | null)[];
  settingsKey: string;
  /** Each family's (prefix, module) pairs after the bogon filter, without the cut pieces; and the pieces. */
  raw: Record<Fam, ModulePairs>;
  pieces: Record<Fam, ModulePairs>;
  bogonKeys: { v4: Set<string>; v6: Set<string> }[];
  counts: { v4: number; v6: number }[];
  content: RevisionContent;
}

export interface RebuildOptions {
  /** The block lengths (IPv4, IPv6); smaller blocks rebuild less. Tests use long ones to cross many. */
  blockBits?: { v4: number; v6: number };
}

const settingsKey = (s: BogonSettings) => JSON.stringify([s.min_prefix_length_v4 ?? null, s.min_prefix_length_v6 ?? null, s.exclude_prefixes ?? null]);
const byId = (a: ModuleInput, b: ModuleInput) => (a.module_id < b.module_id ? -1 : a.module_id > b.module_id ? 1 : 0);

/** The full build, and the state an incremental rebuild starts from (none when a module excludes). */
export function buildWithState(input: ModuleInput[], settings: BogonSettings): { built: BuiltRevision; state: BuildState | null } {
  const { built, filtered } = buildRevisionWithState(input, settings);
  if (input.some((m) => m.action === "exclude")) return { built, state: null };
  const modules = [...input].sort(byId);
  return {
    built,
    state: {
      ids: modules.map((m) => m.module_id),
      communities: modules.map((m) => m.community),
      settingsKey: settingsKey(settings),
      raw: filtered.raw,
      pieces: filtered.pieces,
      bogonKeys: filtered.bogonKeys,
      counts: filtered.counts,
      content: built.content,
    },
  };
}

/** The pairs of `p` whose module `keep` says, in order. */
function select(p: ModulePairs, keep: (m: number) => boolean): ModulePairs {
  const t = p.table;
  const W = t.W;
  const out = new PrefixTable(t.family, Math.max(1, t.count));
  const tags = new Uint32Array(t.count);
  let n = 0;
  for (let i = 0; i < t.count; i++) {
    if (!keep(p.tags[i]!)) continue;
    if (W === 1) out.words[n] = t.words[i]!;
    else out.words.set(t.words.subarray(i * 4, i * 4 + 4), n * 4);
    out.lens[n] = t.lens[i]!;
    tags[n++] = p.tags[i]!;
  }
  out.count = n;
  return { table: out, tags: tags.subarray(0, n) };
}

const comparePair = (a: ModulePairs, i: number, b: ModulePairs, j: number) => {
  const W = a.table.W;
  return compareWords(a.table.words, i * W, b.table.words, j * W, W) || a.table.lens[i]! - b.table.lens[j]! || a.tags[i]! - b.tags[j]!;
};

/** Two sorted pair lists merged; `onlyOne` receives the pairs found in one of them only. */
function merge(a: ModulePairs, b: ModulePairs, onlyOne?: (p: ModulePairs, i: number) => void): ModulePairs {
  if (!onlyOne && b.table.count === 0) return a;
  if (!onlyOne && a.table.count === 0) return b;
  const W = a.table.W;
  const out = new PrefixTable(a.table.family, Math.max(1, a.table.count + b.table.count));
  const tags = new Uint32Array(a.table.count + b.table.count);
  let n = 0;
  const take = (p: ModulePairs, i: number) => {
    if (W === 1) out.words[n] = p.table.words[i]!;
    else out.words.set(p.table.words.subarray(i * 4, i * 4 + 4), n * 4);
    out.lens[n] = p.table.lens[i]!;
    tags[n++] = p.tags[i]!;
  };
  let i = 0;
  let j = 0;
  while (i < a.table.count || j < b.table.count) {
    const c = i >= a.table.count ? 1 : j >= b.table.count ? -1 : comparePair(a, i, b, j);
    if (c === 0) {
      take(a, i++);
      j++;
    } else if (c < 0) {
      onlyOne?.(a, i);
      take(a, i++);
    } else {
      onlyOne?.(b, j);
      take(b, j++);
    }
  }
  out.count = n;
  return { table: out, tags: tags.subarray(0, n) };
}

/** First index of sorted `t` whose address is >= words (or > when `after`). */
function lowerBound(t: PrefixTable, words: Uint32Array, after: boolean): number {
  let lo = 0;
  let hi = t.count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareWords(t.words, mid * t.W, words, 0, t.W);
    if (c < 0 || (after && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const textOf = (t: PrefixTable, i: number) => formatPrefix({ family: t.family, words: t.words.subarray(i * t.W, i * t.W + t.W), length: t.lens[i]! });

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
): { built: BuiltRevision; state: BuildState } | null {
  if (input.some((m) => m.action === "exclude")) return null;
  const modules = [...input].sort(byId);
  if (modules.length !== state.ids.length || settingsKey(settings) !== state.settingsKey) return null;
  for (let mi = 0; mi < modules.length; mi++) {
    if (modules[mi]!.module_id !== state.ids[mi] || modules[mi]!.community !== state.communities[mi]) return null;
  }
  const bits = options.blockBits ?? BLOCK_BITS;
  const changedIdx = modules.map((m, mi) => (changed.has(m.module_id) ? mi : -1)).filter((mi) => mi >= 0);
  const isChanged = new Uint8Array(modules.length);
  for (const mi of changedIdx) isChanged[mi] = 1;
  const fresh = filterModules(
    changedIdx.map((mi) => modules[mi]!),
    settings,
  );
  const relabel = (p: ModulePairs): ModulePairs => ({ table: p.table, tags: p.tags.map((t) => changedIdx[t]!) });

  const raw = {} as Record<Fam, ModulePairs>;
  const pieces = {} as Record<Fam, ModulePairs>;
  const effective = {} as Record<Fam, ModulePairs>;
  const blocks = {} as Record<Fam, Blocks>;
  for (const fam of FAMS) {
    const newRaw = relabel(fresh.raw[fam]);
    const newPieces = relabel(fresh.pieces[fam]);
    raw[fam] = merge(
      select(state.raw[fam], (m) => !isChanged[m]),
      newRaw,
    );
    pieces[fam] = merge(
      select(state.pieces[fam], (m) => !isChanged[m]),
      newPieces,
    );
    effective[fam] = merge(raw[fam], pieces[fam]);
    // The changed modules' pairs before and after: those in one of them only are what changed.
    const before = merge(
      select(state.raw[fam], (m) => isChanged[m] === 1),
      select(state.pieces[fam], (m) => isChanged[m] === 1),
    );
    const after = merge(newRaw, newPieces);
    const b = new Blocks(before.table.W);
    merge(before, after, (p, i) => b.add(p.table.words, i * p.table.W, Math.min(p.table.lens[i]!, bits[fam])));
    b.normalize();
    blocks[fam] = b;
  }

  const counts = state.counts.slice();
  const bogonKeys = state.bogonKeys.slice();
  changedIdx.forEach((mi, k) => {
    counts[mi] = fresh.counts[k]!;
    bogonKeys[mi] = fresh.bogonKeys[k]!;
  });

  const oldParsed = { v4: parsedWide(state.content.v4, "v4", bits.v4), v6: parsedWide(state.content.v6, "v6", bits.v6) };
  const wide = { v4: wideKeys(effective.v4, oldParsed.v4, bits.v4), v6: wideKeys(effective.v6, oldParsed.v6, bits.v6) };
  let part: BuiltRevision;
  for (;;) {
    for (const fam of FAMS) widen(blocks[fam], wide[fam]);
    const inputs = modules.map((m) => ({ module_id: m.module_id, name: m.name, community: m.community, prefixes: [] as string[] }));
    for (const fam of FAMS) {
      const e = effective[fam];
      const b = blocks[fam];
      const last = new Uint32Array(b.W);
      for (let k = 0; k < b.starts.length; k++) {
        lastAddress(b.starts[k]!, 0, b.lens[k]!, b.W, last);
        for (let i = lowerBound(e.table, b.starts[k]!, false), end = lowerBound(e.table, last, true); i < end; i++) {
          inputs[e.tags[i]!]!.prefixes.push(textOf(e.table, i));
        }
      }
    }
    part = buildRevision(inputs, settings);
    // A block whose result holds the block itself (it could merge with its sibling) or merges
    // beyond it is widened to its parent.
    let again = false;
    for (const fam of FAMS) {
      const out = parsePrefixTexts(part.content[fam].prefixes)[fam];
      const b = blocks[fam];
      const keys = new Map<string, string>();
      for (let i = 0; i < out.count; i++) {
        if (out.lens[i]! <= bits[fam])
          keys.set(keyOf(out.words.subarray(i * out.W, i * out.W + out.W), out.lens[i]!), part.content[fam].tagAt(i).communities.join(","));
      }
      if (!keys.size) continue;
      for (let k = 0; k < b.starts.length; k++) {
        for (let len = 0; len <= b.lens[k]! && b.lens[k]! > 0; len++) {
          if (!keys.has(keyOf(b.starts[k]!, len))) continue;
          b.lens[k] = Math.max(0, len - 1);
          maskTo(b.starts[k]!, b.lens[k]!);
          again = true;
          break;
        }
      }
      if (again) b.normalize();
    }
    if (!again) break;
  }

  const content = splice(state.content, part.content, blocks);
  const perTag = new Int32Array(content.tags.length);
  for (const f of [content.v4, content.v6]) for (const tag of f.tags) perTag[tag]!++;
  const announcedBy = new Int32Array(modules.length);
  content.tags.forEach((tag, k) => {
    for (const m of tag.modules) announcedBy[m]! += perTag[k]!;
  });
  const indexOf = new Map(modules.map((m, mi) => [m.module_id, mi]));
  const bogons = new Set<string>();
  for (const b of bogonKeys) for (const fam of FAMS) for (const key of b[fam]) bogons.add(key);
  let distinct = bogons.size;
  for (const fam of FAMS) {
    const t = raw[fam].table;
    for (let k = 0; k < t.count; k++) {
      if (k === 0 || t.lens[k] !== t.lens[k - 1] || compareWords(t.words, k * t.W, t.words, (k - 1) * t.W, t.W) !== 0) distinct++;
    }
  }
  const partModules = new Map(part.modules.map((m) => [m.module_id, m]));
  const built: BuiltRevision = {
    content,
    digest: digestOf(content),
    input_prefix_count: distinct,
    dropped_prefix_count: bogons.size,
    // The part's entries carry every field the full build gives; only the counts are the whole content's.
    modules: input.map((m) => ({ ...partModules.get(m.module_id)!, prefix_count: announcedBy[indexOf.get(m.module_id)!]! })),
    collected: new Map(modules.map((m, mi) => [m.module_id, counts[mi]!])),
  };
  return { built, state: { ...state, raw, pieces, bogonKeys, counts, content } };
}

/** The announced prefixes of a family shorter than the block length, parsed (few). */
function parsedWide(f: RevisionFamily, fam: Fam, blockLen: number): PrefixTable {
  const wide: string[] = [];
  for (const p of f.prefixes) {
    // The length from the last characters (at most three digits after the slash): no substring.
    let len = 0;
    let at = p.length - 1;
    for (let scale = 1; p.charCodeAt(at) !== 47; at--, scale *= 10) len += (p.charCodeAt(at) - 48) * scale;
    if (len < blockLen) wide.push(p);
  }
  return parsePrefixTexts(wide)[fam];
}

/**
 * The last content with each block's prefixes replaced by the part's, tags renumbered in order
 * of first appearance (IPv4, then IPv6), as the full build numbers them.
 */
function splice(old: RevisionContent, part: RevisionContent, blocks: Record<Fam, Blocks>): RevisionContent {
  const tags: RevisionTag[] = [];
  const index = new Map<string, number>();
  const communityArrays = new Map<string, string[]>();
  const tagFor = (t: RevisionTag): number => {
    const joined = t.communities.join(",");
    const key = `${joined}|${t.modules.join(",")}`;
    let k = index.get(key);
    if (k === undefined) {
      let communities = communityArrays.get(joined);
      if (!communities) communityArrays.set(joined, (communities = t.communities));
      index.set(key, (k = tags.push({ communities, modules: t.modules }) - 1));
    }
    return k;
  };
  const oldMap = new Int32Array(old.tags.length).fill(-1);
  const partMap = new Int32Array(part.tags.length).fill(-1);
  const owner = { modules: old.modules, tags };
  const family = (fam: Fam): RevisionFamily => {
    const o = old[fam];
    const p = part[fam];
    const b = blocks[fam];
    const prefixes: string[] = [];
    const out: number[] = [];
    const startOf = (text: string) => parsePrefixTexts([text])[fam].words;
    const firstAtOrAfter = (list: string[], from: number, words: Uint32Array, after: boolean) => {
      let lo = from;
      let hi = list.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        const c = compareWords(startOf(list[mid]!), 0, words, 0, b.W);
        if (c < 0 || (after && c === 0)) lo = mid + 1;
        else hi = mid;
      }
      return lo;
    };
    const keepOld = (from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const t = o.tags[i]!;
        if (oldMap[t] === -1) oldMap[t] = tagFor(old.tags[t]!);
        prefixes.push(o.prefixes[i]!);
        out.push(oldMap[t]!);
      }
    };
    let oi = 0;
    let pi = 0;
    const last = new Uint32Array(b.W);
    for (let k = 0; k < b.starts.length; k++) {
      lastAddress(b.starts[k]!, 0, b.lens[k]!, b.W, last);
      const lo = firstAtOrAfter(o.prefixes, oi, b.starts[k]!, false);
      const hi = firstAtOrAfter(o.prefixes, lo, last, true);
      keepOld(oi, lo);
      const pHi = firstAtOrAfter(p.prefixes, pi, last, true);
      for (let i = pi; i < pHi; i++) {
        const t = p.tags[i]!;
        if (partMap[t] === -1) partMap[t] = tagFor(part.tags[t]!);
        prefixes.push(p.prefixes[i]!);
        out.push(partMap[t]!);
      }
      pi = pHi;
      oi = hi;
    }
    keepOld(oi, o.prefixes.length);
    return new RevisionFamily(prefixes, Uint32Array.from(out), owner);
  };
  const v4 = family("v4");
  const v6 = family("v6");
  return { ...owner, v4, v6 };
}
