// The packed-table API: prefixes as typed arrays, for the revision builder and the guard — a
// million prefixes are a few arrays, not a million objects (parse, sort, compare, last
// address). Parsing rules are `parseCidr`'s in mask mode, which the fast IPv4 path defers to on
// anything unusual.
import { type Family, formatIPv4, formatIPv6 } from "./address.js";
import { parseCidr } from "./cidr.js";
import { compareWords, setLastAddress } from "./words.js";

/**
 * Prefixes of one family: prefix i has its network address at `words[i*W .. i*W+W)` (most
 * significant word first, host bits clear) and its length at `lens[i]`.
 */
export class PrefixTable {
  readonly W: 1 | 4;
  words: Uint32Array;
  lens: Uint8Array;
  count = 0;

  constructor(
    readonly family: Family,
    capacity = 16,
  ) {
    this.W = family === 4 ? 1 : 4;
    this.words = new Uint32Array(Math.max(capacity, 1) * this.W);
    this.lens = new Uint8Array(Math.max(capacity, 1));
  }

  /** Makes room for one more prefix; returns its index. */
  next(): number {
    if (this.count === this.lens.length) {
      const words = new Uint32Array(this.words.length * 2);
      words.set(this.words);
      const lens = new Uint8Array(this.lens.length * 2);
      lens.set(this.lens);
      this.words = words;
      this.lens = lens;
    }
    return this.count;
  }

  push(words: ArrayLike<number>, off: number, len: number): void {
    const i = this.next();
    for (let w = 0; w < this.W; w++) this.words[i * this.W + w] = words[off + w]!;
    this.lens[i] = len;
    this.count = i + 1;
  }
}

/** The prefixes of a PrefixList as a table: the same arrays, not a copy. */
export function tableOf(list: Pick<PrefixTable, "family" | "words" | "lens" | "count">): PrefixTable {
  const t = new PrefixTable(list.family, 1);
  t.words = list.words;
  t.lens = list.lens;
  t.count = list.count;
  return t;
}

/** Both families of some prefix texts. */
export interface PrefixTables {
  v4: PrefixTable;
  v6: PrefixTable;
}

export const newTables = (capacity4 = 16, capacity6 = 16): PrefixTables => ({ v4: new PrefixTable(4, capacity4), v6: new PrefixTable(6, capacity6) });

/**
 * Parses `a.b.c.d/len` (or a bare address, a /32) into row i of an IPv4 table, host bits
 * cleared, and returns true; false for anything else (leading zeros, spaces, IPv6...), which
 * the caller hands to parseCidr. Writes straight into the typed arrays: no object, and no
 * boxed number, a prefix: measured 73-89 ns a prefix with the push, against 120-350 ns for
 * parseCidr and an array each, which the collector then sweeps.
 */
export function parseIPv4Into(text: string, t: PrefixTable, i: number): boolean {
  const n = text.length;
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  let k = 0;
  for (; k < n; k++) {
    const c = text.charCodeAt(k);
    if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return false;
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return false;
    } else if (c === 46) {
      if (digits === 0 || dots === 3) return false;
      value = ((value << 8) | part) >>> 0;
      part = 0;
      digits = 0;
      dots++;
    } else if (c === 47) {
      break;
    } else {
      return false;
    }
  }
  if (digits === 0 || dots !== 3) return false;
  value = ((value << 8) | part) >>> 0;
  let len = 32;
  if (k < n) {
    if (k + 1 === n || k + 3 < n) return false;
    len = 0;
    for (let j = k + 1; j < n; j++) {
      const c = text.charCodeAt(j);
      if (c < 48 || c > 57 || (j === k + 2 && len === 0)) return false;
      len = len * 10 + (c - 48);
    }
    if (len > 32) return false;
  }
  t.words[i] = len === 0 ? 0 : (value & (0xffffffff << (32 - len))) >>> 0;
  t.lens[i] = len;
  return true;
}

/**
 * Parses a prefix text into the table of its family (host bits cleared) and returns that
 * table. Text that is not a prefix throws the shared parser's PrefixError.
 */
export function pushPrefixText(text: string, tables: PrefixTables): PrefixTable {
  const t = tables.v4;
  const i = t.next();
  if (parseIPv4Into(text, t, i)) {
    t.count = i + 1;
    return t;
  }
  const p = parseCidr(text, { mode: "mask" });
  const into = p.family === 4 ? tables.v4 : tables.v6;
  into.push(p.words, 0, p.length);
  return into;
}

/**
 * The table of `count` canonical IPv4 prefixes joined by single spaces (a stored revision
 * family's text), read in one pass over the one string: no string a prefix is made, which
 * splitting first costs (~50 ms at 1.2M, and as much again in collections). Null when the text
 * is anything else (a prefix not canonical, another separator, another count): the caller
 * parses it the general way.
 */
export function parseJoinedIPv4(joined: string, count: number): PrefixTable | null {
  const t = new PrefixTable(4, Math.max(1, count));
  const n = joined.length;
  // The digit at p (0-9), or -1 for anything else, past the end included.
  const digit = (p: number): number => {
    const c = p < n ? joined.charCodeAt(p) - 48 : -1;
    return c >>> 0 > 9 ? -1 : c;
  };
  let i = 0;
  let k = 0;
  while (i < n) {
    if (k >= count) return null;
    let value = 0;
    for (let q = 0; q < 4; q++) {
      let part = digit(i);
      if (part < 0) return null;
      i++;
      for (let d = 1; d < 3 && digit(i) >= 0; d++) {
        if (part === 0) return null; // a leading zero
        part = part * 10 + digit(i);
        i++;
      }
      if (part > 255 || digit(i) >= 0) return null;
      value = ((value << 8) | part) >>> 0;
      if (q < 3) {
        if (i >= n || joined.charCodeAt(i) !== 46) return null;
        i++;
      }
    }
    if (i >= n || joined.charCodeAt(i) !== 47) return null;
    i++;
    let len = digit(i);
    if (len < 0) return null;
    i++;
    if (digit(i) >= 0) {
      if (len === 0) return null;
      len = len * 10 + digit(i);
      i++;
    }
    if (len > 32 || digit(i) >= 0) return null;
    if (len === 0 ? value !== 0 : len < 32 && (value & (0xffffffff >>> len)) !== 0) return null;
    t.words[k] = value;
    t.lens[k] = len;
    k++;
    if (i < n) {
      if (joined.charCodeAt(i) !== 32 || i + 1 >= n) return null;
      i++;
    }
  }
  if (k !== count) return null;
  t.count = k;
  return t;
}

const SLASH = Array.from({ length: 129 }, (_, len) => `/${len}`);

/** Canonical text of prefix i of `t` (formatPrefix's), written from its words without a Prefix made for it. */
export function prefixText(t: PrefixTable, i: number): string {
  return (t.W === 1 ? formatIPv4(t.words, i) : formatIPv6(t.words, i * 4)) + SLASH[t.lens[i]!]!;
}

/** Parses every text; see pushPrefixText. */
export function parsePrefixTexts(texts: readonly string[]): PrefixTables {
  const tables = newTables(texts.length, 16);
  for (const text of texts) pushPrefixText(text, tables);
  return tables;
}

/** Compares prefixes by address, then length (a container sorts before its contents). */
export function comparePrefixes(a: PrefixTable, i: number, b: PrefixTable, j: number): number {
  const W = a.W;
  return compareWords(a.words, i * W, b.words, j * W, W) || a.lens[i]! - b.lens[j]!;
}

/** Writes the last address of prefix (words[at..], len) into out[0..W). */
export function lastAddress(words: Uint32Array, at: number, len: number, W: number, out: Uint32Array): void {
  setLastAddress(words, at, len, W, out, 0);
}

/**
 * The distinct pairs (prefix i of `table`, tags[i]), sorted by address, then length, then tag.
 * IPv4 sorts packed float keys natively (1.1M pairs: 140-160 ms, against 560-590 ms for the
 * comparator sort); IPv6, or more tags than a key can hold, uses the comparator.
 */
export function sortedPairs(table: PrefixTable, tags: Uint32Array, tagCount: number): { table: PrefixTable; tags: Uint32Array } {
  const n = table.count;
  const out = new PrefixTable(table.family, n);
  const outTags = new Uint32Array(n);
  const W = table.W;
  // (network * 33 + len) * tagCount + tag stays below 2^53 while tagCount < 63,550.
  if (W === 1 && tagCount < 63_000) {
    const keys = new Float64Array(n);
    for (let i = 0; i < n; i++) keys[i] = (table.words[i]! * 33 + table.lens[i]!) * tagCount + tags[i]!;
    keys.sort();
    let m = 0;
    for (let k = 0; k < n; k++) {
      const key = keys[k]!;
      if (k > 0 && key === keys[k - 1]) continue;
      const tag = key % tagCount;
      const rest = (key - tag) / tagCount;
      const len = rest % 33;
      out.words[m] = (rest - len) / 33;
      out.lens[m] = len;
      outTags[m++] = tag;
    }
    out.count = m;
    return { table: out, tags: outTags.subarray(0, m) };
  }
  const order = Array.from({ length: n }, (_, i) => i);
  order.sort((i, j) => comparePrefixes(table, i, table, j) || tags[i]! - tags[j]!);
  let m = 0;
  for (let k = 0; k < n; k++) {
    const i = order[k]!;
    const prev = k > 0 ? order[k - 1]! : -1;
    if (prev >= 0 && tags[prev] === tags[i] && comparePrefixes(table, prev, table, i) === 0) continue;
    out.push(table.words, i * W, table.lens[i]!);
    outTags[m++] = tags[i]!;
  }
  return { table: out, tags: outTags.subarray(0, m) };
}

/** Whether the table is sorted by address then length (each prefix after the one before). */
export function isSorted(table: PrefixTable): boolean {
  for (let i = 1; i < table.count; i++) if (comparePrefixes(table, i - 1, table, i) > 0) return false;
  return true;
}
