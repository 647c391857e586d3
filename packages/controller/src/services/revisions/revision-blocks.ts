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

/** First index of sorted `t` in [from, to) whose address is >= words (or > when `after`); `to` when none. */
export function lowerBound(t: PrefixTable, words: Uint32Array, after: boolean, from = 0, to = t.count): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const c = compareWords(t.words, mid * t.W, words, 0, t.W);
    if (c < 0 || (after && c === 0)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Where each /16 of a sorted IPv4 table starts (65,537 entries), made once a table: a block
 * (a /16 or longer) is then looked up within its /16, and most modules have nothing in most
 * blocks. Tables are not changed once made (a rebuild makes new ones), so they key the cache.
 */
const slash16s = new WeakMap<PrefixTable, Uint32Array>();
function slash16sOf(t: PrefixTable): Uint32Array {
  let index = slash16s.get(t);
  if (!index) {
    index = new Uint32Array(65_537);
    let i = 0;
    for (let a = 0; a <= 65_536; a++) {
      while (i < t.count && t.words[i]! >>> 16 < a) i++;
      index[a] = i;
    }
    slash16s.set(t, index);
  }
  return index;
}

/**
 * The prefixes of sorted `t` inside block b, `[lo, hi)`; with `strict`, without b itself and
 * the prefixes that contain it (they sort first), unless b is the whole space.
 */
export function rangeIn(t: PrefixTable, b: Block, strict: boolean, from = 0): [number, number] {
  let to = t.count;
  if (t.W === 1 && b.len >= 16 && t.count > 4096) {
    const index = slash16sOf(t);
    const a = b.start[0]! >>> 16;
    from = Math.max(from, index[a]!);
    to = Math.max(from, index[a + 1]!);
  }
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
export function covers(t: PrefixTable, b: Block): boolean {
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

/** A prefix as a key: a number for IPv4 (address * 64 + length), text for IPv6. */
const keyOf = (words: ArrayLike<number>, at: number, W: number, len: number): number | string =>
  W === 1 ? words[at]! * 64 + len : `${words[at]},${words[at + 1]},${words[at + 2]},${words[at + 3]}/${len}`;

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
    if (W === 1) key = (len === 0 ? 0 : (a & (-1 << (32 - len))) >>> 0) * 64 + len;
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
