import { formatIPv4, formatIPv6 } from "./address.js";
import type { Address } from "./cidr.js";
import { parseAddress } from "./cidr.js";
import { PrefixList, parsePrefixList } from "./prefix-list.js";
import { sortOrder } from "./sort.js";
import { compareWords, containsWords, increment, setLastAddress } from "./words.js";

/** Longest-prefix-match over a fixed set of items that each have a prefix. */
export interface PrefixIndex<T> {
  /** Number of items. */
  readonly size: number;
  /** Every item whose prefix contains `address`, shortest prefix first (equal prefixes in input order). */
  lookup(address: string | Address): T[];
  /** The first item with the longest prefix that contains `address`, if any. */
  longest(address: string | Address): T | undefined;
}

/*
 * Layout, per family. The distinct prefixes ("groups") are sorted by address then length, and
 * each knows its nearest containing group (`parent`). The address space is cut at every
 * group's first address and just after its last one into elementary intervals; interval j
 * starts at `bounds[j]` and `deepest[j]` is the longest group that contains all of it (-1 for
 * none). A lookup is one binary search over `bounds`, then a walk up `parent` for the rest.
 * Build is one sort and one walk; memory is a few typed arrays (for 1M IPv4 prefixes: ~30 MB
 * including the parse). Measured figures are in bench/README.md.
 */
class FamilyIndex {
  readonly W: number;
  bounds: Uint32Array;
  deepest: Int32Array;
  count = 0;
  /** Items of group g: members[first[g] .. first[g+1]), as indexes into the item array. */
  readonly members: Int32Array;
  readonly first: Int32Array;
  readonly parent: Int32Array;

  constructor(list: PrefixList, itemOf: Int32Array) {
    const { words, lens, W } = list;
    this.W = W;
    const n = list.count;
    const order = sortOrder(list);
    this.members = new Int32Array(n);
    this.first = new Int32Array(n + 1);
    this.parent = new Int32Array(n);
    this.bounds = new Uint32Array((2 * n + 1) * W);
    this.deepest = new Int32Array(2 * n + 1);
    const groupAt = new Int32Array(n); // list index of each group's prefix
    const chain = new Int32Array(130);
    let depth = 0;
    let groups = 0;
    const after = new Uint32Array(W);
    const closeTop = (): void => {
      const g = chain[--depth]!;
      const at = groupAt[g]!;
      setLastAddress(words, at * W, lens[at]!, W, after, 0);
      if (increment(after, 0, W)) this.cut(after, 0, depth > 0 ? chain[depth - 1]! : -1);
    };
    for (let k = 0; k < n; k++) {
      const i = order[k]!;
      this.members[k] = itemOf[i]!;
      const prev = k > 0 ? order[k - 1]! : -1;
      if (prev >= 0 && lens[prev] === lens[i] && compareWords(words, prev * W, words, i * W, W) === 0) continue;
      const g = groups++;
      this.first[g] = k;
      groupAt[g] = i;
      while (depth > 0) {
        const top = groupAt[chain[depth - 1]!]!;
        if (containsWords(words, top * W, lens[top]!, words, i * W, W)) break;
        closeTop();
      }
      this.parent[g] = depth > 0 ? chain[depth - 1]! : -1;
      chain[depth++] = g;
      this.cut(words, i * W, g);
    }
    while (depth > 0) closeTop();
    this.first[groups] = n;
    this.directory = directoryOf(this.bounds, this.count, W);
  }

  /** From address `words[at]` on, the deepest group is `g`. */
  private cut(words: Uint32Array, at: number, g: number): void {
    const W = this.W;
    if (this.count > 0 && compareWords(this.bounds, (this.count - 1) * W, words, at, W) === 0) {
      this.deepest[this.count - 1] = g;
      return;
    }
    for (let w = 0; w < W; w++) this.bounds[this.count * W + w] = words[at + w]!;
    this.deepest[this.count++] = g;
  }

  /** Where the bounds of each value of the first word's top bits start (directoryOf); null for a small index. */
  readonly directory: { entries: Uint32Array; shift: number } | null;

  /** The deepest group containing the address, or -1. */
  find(address: Uint32Array): number {
    const W = this.W;
    let lo = 0;
    let hi = this.count;
    const directory = this.directory;
    if (directory !== null) {
      const top = address[0]! >>> directory.shift;
      lo = directory.entries[top]!;
      hi = directory.entries[top + 1]!;
    }
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (compareWords(this.bounds, mid * W, address, 0, W) <= 0) lo = mid + 1;
      else hi = mid;
    }
    return lo === 0 ? -1 : this.deepest[lo - 1]!;
  }
}

/*
 * A lookup's binary search over a million bounds is ~21 steps, most of them a cache miss in an
 * 11 MB array (its share of a lookup of the 1.2M-prefix tenant in the bench: ~3.5 µs of ~33).
 * The directory says, for each value of an address's top bits, which bounds share it: every
 * bound before them is below the address and every one after them above it, so the search
 * starts and ends there (a few steps in a few cache lines). It has a quarter as many entries
 * as the index has bounds, up to 2^16 (256 KiB, from ~260k bounds on); none under DIRECTORY_MIN.
 */
const DIRECTORY_MAX_BITS = 16;
const DIRECTORY_MIN = 1 << 10;

/** The directory of the `count` bounds: entry t is the first bound whose first word's top `bits` bits are t or more (the last is `count`). */
function directoryOf(bounds: Uint32Array, count: number, W: number): { entries: Uint32Array; shift: number } | null {
  if (count < DIRECTORY_MIN) return null;
  const bits = Math.min(DIRECTORY_MAX_BITS, Math.floor(Math.log2(count)) - 2);
  const shift = 32 - bits;
  const size = 2 ** bits;
  const entries = new Uint32Array(size + 1);
  let j = 0;
  for (let t = 0; t <= size; t++) {
    while (j < count && bounds[j * W]! >>> shift < t) j++;
    entries[t] = j;
  }
  return { entries, shift };
}

const defaultPrefixOf = (item: unknown): string => (item as { prefix: string }).prefix;

/**
 * Builds a longest-prefix-match index over `items` (host bits of their prefixes are cleared;
 * text that is not a prefix throws PrefixError). The items are kept as given, not copied.
 */
export function buildPrefixIndex<T extends { prefix: string }>(items: readonly T[]): PrefixIndex<T>;
export function buildPrefixIndex<T>(items: readonly T[], prefixOf: (item: T) => string): PrefixIndex<T>;
export function buildPrefixIndex<T>(items: readonly T[], prefixOf: (item: T) => string = defaultPrefixOf): PrefixIndex<T> {
  const familyOfItem = new Uint8Array(items.length);
  const { v4, v6 } = parsePrefixList(items.map(prefixOf), familyOfItem);
  // Each family's list is in item order, so the item of each list entry follows from the family.
  const itemOf4 = new Int32Array(v4.count);
  const itemOf6 = new Int32Array(v6.count);
  let n4 = 0;
  let n6 = 0;
  for (let i = 0; i < items.length; i++) {
    if (familyOfItem[i] === 4) itemOf4[n4++] = i;
    else itemOf6[n6++] = i;
  }
  const families = [new FamilyIndex(v4, itemOf4), new FamilyIndex(v6, itemOf6)] as const;

  return {
    size: items.length,
    lookup(address) {
      return containing(families, address).map((i) => items[i]!);
    },
    longest(address) {
      const i = longestOf(families, address);
      return i < 0 ? undefined : items[i];
    },
  };
}

/** The family index of `address` and the deepest group in it that contains the address (-1 for none). */
function resolve(families: readonly [FamilyIndex, FamilyIndex], address: string | Address): { index: FamilyIndex; group: number } {
  const a = typeof address === "string" ? parseAddress(address) : address;
  const index = families[a.family === 4 ? 0 : 1];
  return { index, group: index.find(a.words) };
}

/** Items whose prefix contains `address`, shortest prefix first, equal prefixes in input order. */
function containing(families: readonly [FamilyIndex, FamilyIndex], address: string | Address): number[] {
  const { index, group } = resolve(families, address);
  const found: number[] = [];
  for (let g = group; g >= 0; g = index.parent[g]!) {
    for (let k = index.first[g + 1]! - 1; k >= index.first[g]!; k--) found.push(index.members[k]!);
  }
  return found.reverse();
}

/** The first item with the longest prefix that contains `address`, or -1. */
function longestOf(families: readonly [FamilyIndex, FamilyIndex], address: string | Address): number {
  const { index, group } = resolve(families, address);
  return group < 0 ? -1 : index.members[index.first[group]!]!;
}

/**
 * Longest-prefix-match over prefix texts that answers with the texts' positions and keeps no
 * string or object per prefix: the texts are parsed into packed words and lengths, and the text
 * of a position is written anew from them when asked for (`text`). A text that is not the
 * canonical form of its prefix (host bits set, a bare address, IPv6 not in RFC 5952 form) is
 * kept as given, so `text(i)` is always exactly `texts[i]`. For indexes held a long time over
 * a million prefixes: a million strings are a million objects that every full collection of the
 * heap walks, where this layout is a dozen typed arrays (~40 bytes an IPv4 prefix, ~80 an IPv6).
 */
export interface PrefixTextIndex {
  /** Number of texts. */
  readonly size: number;
  /** Positions of every text whose prefix contains `address`, shortest prefix first (equal prefixes in input order). */
  lookup(address: string | Address): number[];
  /** Position of the first text with the longest prefix that contains `address`, or -1. */
  longest(address: string | Address): number;
  /** texts[i] as it was given. */
  text(i: number): string;
  /** Bytes held: the typed arrays, and the texts kept because they were not canonical. */
  readonly bytes: number;
}

/** Bytes counted for a text kept as given: the string and its entry in the map. */
const BYTES_PER_KEPT_TEXT = 100;

/** Builds a PrefixTextIndex (text that is not a prefix throws PrefixError); holds no reference to `texts`. */
export function buildPrefixTextIndex(texts: readonly string[]): PrefixTextIndex {
  const n = texts.length;
  const familyOfText = new Uint8Array(n);
  const { v4, v6 } = parsePrefixList(texts, familyOfText);
  const rowOf = new Int32Array(n);
  const itemOf4 = new Int32Array(v4.count);
  const itemOf6 = new Int32Array(v6.count);
  const kept = new Map<number, string>();
  let n4 = 0;
  let n6 = 0;
  for (let i = 0; i < n; i++) {
    const v4Text = familyOfText[i] === 4;
    const row = v4Text ? n4++ : n6++;
    (v4Text ? itemOf4 : itemOf6)[row] = i;
    rowOf[i] = row;
    if ((v4Text ? v4.src : v6.src)![row]! < 0) kept.set(i, texts[i]!);
  }
  return indexOf(
    v4,
    v6,
    itemOf4,
    itemOf6,
    (i) => (familyOfText[i] === 4 ? 4 : 6),
    (i) => rowOf[i]!,
    kept,
    rowOf.byteLength + familyOfText.byteLength,
  );
}

/**
 * A PrefixTextIndex over the prefixes of two parsed lists, IPv4's positions first, then IPv6's
 * (a revision's content: its families' tables, each prefix canonical): nothing parsed and no
 * text kept, a text written from the words when asked for. The same answers as
 * buildPrefixTextIndex over the lists' canonical texts, IPv4 first.
 */
export function buildPrefixTableIndex(v4: Pick<PrefixList, "words" | "lens" | "count">, v6: Pick<PrefixList, "words" | "lens" | "count">): PrefixTextIndex {
  const n4 = v4.count;
  const list = (family: 4 | 6, t: Pick<PrefixList, "words" | "lens" | "count">) => {
    const l = new PrefixList(family, 1);
    l.words = t.words;
    l.lens = t.lens;
    l.count = t.count;
    return l;
  };
  const itemOf4 = new Int32Array(n4);
  for (let i = 0; i < n4; i++) itemOf4[i] = i;
  const itemOf6 = new Int32Array(v6.count);
  for (let i = 0; i < v6.count; i++) itemOf6[i] = n4 + i;
  return indexOf(
    list(4, v4),
    list(6, v6),
    itemOf4,
    itemOf6,
    (i) => (i < n4 ? 4 : 6),
    (i) => (i < n4 ? i : i - n4),
    new Map(),
    0,
  );
}

function indexOf(
  v4: PrefixList,
  v6: PrefixList,
  itemOf4: Int32Array,
  itemOf6: Int32Array,
  familyAt: (i: number) => 4 | 6,
  rowAt: (i: number) => number,
  kept: Map<number, string>,
  extraBytes: number,
): PrefixTextIndex {
  const n = v4.count + v6.count;
  const families = [new FamilyIndex(v4, itemOf4), new FamilyIndex(v6, itemOf6)] as const;
  // Copies cut to size: the lists have spare room, and they refer to their texts (their source).
  const words4 = v4.words.slice(0, v4.count);
  const lens4 = v4.lens.slice(0, v4.count);
  const words6 = v6.words.slice(0, v6.count * 4);
  const lens6 = v6.lens.slice(0, v6.count);
  let bytes = extraBytes + words4.byteLength + lens4.byteLength + words6.byteLength + lens6.byteLength;
  for (const f of families) {
    bytes +=
      f.bounds.byteLength + f.deepest.byteLength + f.members.byteLength + f.first.byteLength + f.parent.byteLength + (f.directory?.entries.byteLength ?? 0);
  }
  bytes += kept.size * BYTES_PER_KEPT_TEXT;
  return {
    size: n,
    bytes,
    lookup: (address) => containing(families, address),
    longest: (address) => longestOf(families, address),
    text(i) {
      if (!(i >= 0 && i < n)) throw new RangeError(`no text at ${i} (size ${n})`);
      const given = kept.get(i);
      if (given !== undefined) return given;
      const row = rowAt(i);
      return familyAt(i) === 4 ? `${formatIPv4(words4, row)}/${lens4[row]}` : `${formatIPv6(words6, row * 4)}/${lens6[row]}`;
    },
  };
}
