import { compareWords, formatPrefix, lastAddress, type PrefixTable } from "@rlc/shared/prefix";

// The address blocks an incremental rebuild works on (revision-incremental.ts), and the layer
// of short module prefixes that cover them.

export type Fam = "v4" | "v6";
export const FAMS: readonly Fam[] = ["v4", "v6"];

/** An aligned prefix of the address space: `start` masked to `len`. */
export interface Block {
  start: Uint32Array;
  len: number;
  /** Its last address. */
  last: Uint32Array;
}

export function maskTo(w: Uint32Array, len: number) {
  for (let k = 0; k < w.length; k++) {
    const bits = Math.min(32, Math.max(0, len - k * 32));
    w[k] = bits === 0 ? 0 : bits === 32 ? w[k]! : (w[k]! & ~(2 ** (32 - bits) - 1)) >>> 0;
  }
}

/** The block of length `len` that holds words[at .. at + W). */
export function blockOf(words: Uint32Array, at: number, W: number, len: number): Block {
  const start = Uint32Array.from(words.subarray(at, at + W));
  maskTo(start, len);
  const last = new Uint32Array(W);
  lastAddress(start, 0, len, W, last);
  return { start, len, last };
}

export const parentOf = (b: Block): Block => blockOf(b.start, 0, b.start.length as 1 | 4, b.len - 1);

export const blockText = (b: Block): string => formatPrefix({ family: b.start.length === 1 ? 4 : 6, words: b.start, length: b.len });

/** Sorted by address, without the blocks inside another. */
export function normalize(blocks: readonly Block[]): Block[] {
  const W = blocks[0]?.start.length ?? 1;
  const sorted = [...blocks].sort((x, y) => compareWords(x.start, 0, y.start, 0, W) || x.len - y.len);
  const out: Block[] = [];
  for (const b of sorted) {
    if (out.length && compareWords(b.start, 0, out[out.length - 1]!.last, 0, W) <= 0) continue; // inside the one before
    out.push(b);
  }
  return out;
}

/**
 * Sorted disjoint blocks in two groups such that no two blocks of a group touch (one's last
 * address right before the other's first): blocks that do not touch can be built together,
 * as nothing one of them gives can merge with what another gives.
 */
export function apart(blocks: readonly Block[]): [Block[], Block[]] {
  const groups: [Block[], Block[]] = [[], []];
  let g = 0;
  const next = new Uint32Array(blocks[0]?.start.length ?? 1);
  for (let k = 0; k < blocks.length; k++) {
    if (k > 0) {
      next.set(blocks[k - 1]!.last);
      g = increment(next) && compareWords(next, 0, blocks[k]!.start, 0, next.length) === 0 ? 1 - g : 0;
    }
    groups[g]!.push(blocks[k]!);
  }
  return groups;
}

/** v += 1; false when it wraps around (v was the last address). */
function increment(v: Uint32Array): boolean {
  for (let w = v.length - 1; w >= 0; w--) {
    if (v[w] !== 0xffffffff) {
      v[w] = v[w]! + 1;
      return true;
    }
    v[w] = 0;
  }
  return false;
}

/**
 * First index of sorted `t` in [from, to) whose address is >= words[at .. at + W) (or > when
 * `after`); `to` when none. IPv4 compares the numbers in place: the rebuild makes tens of
 * thousands of these searches, mostly before V8 has optimised anything.
 */
export function lowerBound(t: PrefixTable, words: Uint32Array, after: boolean, from = 0, to = t.count, at = 0): number {
  let lo = from;
  let hi = to;
  if (t.W === 1) {
    const x = words[at]!;
    const tw = t.words;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const v = tw[mid]!;
      if (v < x || (after && v === x)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareWords(t.words, mid * t.W, words, at, t.W);
    if (c < 0 || (after && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The IPv4 occupancy's granule: a /20 (2^20 bits, 128 KiB a table). */
export const GRANULE_SHIFT = 12;

/**
 * Which /20s some prefix of a sorted IPv4 table starts in, as bits: a rebuild asks every
 * module's table for each block's prefixes (tens of thousands of binary searches, before V8
 * has optimised them: ~50 ms in the controller), and most modules have none in most blocks.
 * Made once a table (a module's part of the last build), in one pass. Null for IPv6.
 */
export function occupancyOf(t: PrefixTable): Uint32Array | null {
  if (t.W !== 1) return null;
  const bits = new Uint32Array(1 << (32 - GRANULE_SHIFT - 5));
  const w = t.words;
  for (let i = 0; i < t.count; i++) {
    const g = w[i]! >>> GRANULE_SHIFT;
    bits[g >>> 5]! |= 1 << (g & 31);
  }
  return bits;
}

/** False when no prefix of the table `occupied` was made from starts in addresses [first, last] (IPv4); true when some may. */
export function mayStartIn(occupied: Uint32Array | null | undefined, first: number, last: number): boolean {
  if (!occupied) return true;
  const a = first >>> GRANULE_SHIFT;
  const z = last >>> GRANULE_SHIFT;
  if (z - a > 4096) return true;
  for (let g = a; g <= z; g++) if (occupied[g >>> 5]! & (1 << (g & 31))) return true;
  return false;
}

/**
 * The prefixes of sorted `t` inside block b, `[lo, hi)`; with `strict`, without b itself and
 * the prefixes that contain it (they sort first), unless b is the whole space.
 */
export function rangeIn(t: PrefixTable, b: Block, strict: boolean, from = 0): [number, number] {
  // Two binary searches: an index of each table's /16s (65,537 entries) made them shorter, but
  // a rebuild after a full build made one for every module's table and the last content's,
  // ~2.6M steps of a cold loop (15-35 ms in the controller), for 1-2k blocks.
  const to = t.count;
  let lo = lowerBound(t, b.start, false, from, to);
  const hi = lowerBound(t, b.last, true, lo, to);
  if (strict && b.len > 0) while (lo < hi && t.lens[lo]! <= b.len && compareWords(t.words, lo * t.W, b.start, 0, t.W) === 0) lo++;
  else while (lo < hi && t.lens[lo]! < b.len) lo++;
  return [lo, hi];
}

/** Whether prefix i of `t` contains block b (b itself included). */
export function holds(t: PrefixTable, i: number, b: Block): boolean {
  if (t.lens[i]! > b.len) return false;
  const w = Uint32Array.from(b.start);
  maskTo(w, t.lens[i]!);
  return compareWords(t.words, i * t.W, w, 0, t.W) === 0;
}

/** Whether the prefixes of sorted `t` inside b (b itself included) cover all of b. */
export function covers(t: PrefixTable, b: Block, occupied?: Uint32Array | null): boolean {
  if (t.W === 1 && !mayStartIn(occupied, b.start[0]!, b.last[0]!)) return false;
  const W = t.W;
  const [lo, hi] = rangeIn(t, b, false);
  const need = Uint32Array.from(b.start); // the first address not covered yet
  const last = new Uint32Array(W);
  for (let i = lo; i < hi; i++) {
    if (compareWords(t.words, i * W, need, 0, W) > 0) return false;
    lastAddress(t.words, i * W, t.lens[i]!, W, last);
    if (compareWords(last, 0, need, 0, W) >= 0) {
      if (compareWords(last, 0, b.last, 0, W) >= 0) return true;
      need.set(last);
      increment(need);
    }
  }
  return false;
}

/** The IPv4 key of the prefix of length len that holds address a (`>>> 32` would shift by 0). */
const v4Key = (a: number, len: number): number => (len === 0 ? 0 : (a >>> (32 - len)) * 64 + len);

/**
 * A prefix as a key: a number for IPv4 (its `len` leading bits * 64 + length: a small integer
 * for the layer's short prefixes, which V8 hashes without a heap number), text for IPv6.
 */
const keyOf = (words: ArrayLike<number>, at: number, W: number, len: number): number | string =>
  W === 1 ? v4Key(words[at]!, len) : `${words[at]},${words[at + 1]},${words[at + 2]},${words[at + 3]}/${len}`;

/**
 * The module prefixes shorter than the block length, by prefix: which modules hold each. A
 * block is never longer than the block length, so these are all the prefixes that can contain
 * one. Kept by the tenant's last build; a rebuild copies it before it changes a module's part.
 */
export interface WideLayer {
  bits: number;
  modules: Map<number | string, number[]>;
  /** The lengths some prefix of the layer has. */
  lengths: Set<number>;
}

export function wideLayerOf(tables: readonly PrefixTable[], bits: number): WideLayer {
  const layer: WideLayer = { bits, modules: new Map(), lengths: new Set() };
  tables.forEach((t, mi) => {
    setWide(layer, mi, null, t);
  });
  return layer;
}

/** Module mi's prefixes in the layer: those of `before` out, those of `after` in. */
export function setWide(layer: WideLayer, mi: number, before: PrefixTable | null, after: PrefixTable | null) {
  const each = (t: PrefixTable, fn: (key: number | string, len: number) => void) => {
    for (let i = 0; i < t.count; i++) if (t.lens[i]! < layer.bits) fn(keyOf(t.words, i * t.W, t.W, t.lens[i]!), t.lens[i]!);
  };
  if (before) {
    each(before, (key) => {
      const list = layer.modules.get(key)!.filter((m) => m !== mi);
      if (list.length) layer.modules.set(key, list);
      else layer.modules.delete(key);
    });
  }
  if (after) {
    each(after, (key, len) => {
      const list = layer.modules.get(key);
      layer.modules.set(key, list ? [...list, mi].sort((x, y) => x - y) : [mi]);
      layer.lengths.add(len);
    });
  }
}

export const copyWide = (layer: WideLayer): WideLayer => ({ bits: layer.bits, modules: new Map(layer.modules), lengths: new Set(layer.lengths) });

/** The modules with a prefix that contains block b and is shorter than it (b itself is not looked up). */
export function coveringModules(layer: WideLayer, b: Block): number[] {
  let out: number[] | null = null;
  const W = b.start.length;
  const w = new Uint32Array(W);
  const a = b.start[0]!;
  for (const len of layer.lengths) {
    if (len >= b.len) continue;
    let key: number | string;
    if (W === 1) key = v4Key(a, len);
    else {
      w.set(b.start);
      maskTo(w, len);
      key = keyOf(w, 0, W, len);
    }
    const list = layer.modules.get(key);
    if (list) out = out ? [...new Set([...out, ...list])] : list;
  }
  return out ?? [];
}
