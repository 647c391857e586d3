import { PrefixList } from "./prefix-list.js";

/** Below this many prefixes a comparison sort beats the radix sort's fixed cost. */
const RADIX_MIN = 2048;

/**
 * The order of `list` by address, then length (shorter first): an ancestor comes right before
 * its descendants, and equal prefixes are adjacent in their original order (the sort is stable).
 *
 * Measured on the shuffled ASN table (565k IPv4 / 168k IPv6 prefixes, Node 20, a busy
 * 2-core VM): this LSD radix sort on 16-bit digits of an index array takes 16 / 17 ms;
 * Int32Array.sort with a comparator 194 / 52 ms; 11-bit digits were no faster. Passes whose
 * digit is the same for every prefix (the low words of most IPv6 prefixes) are skipped, found
 * from histograms that one scan fills for all passes at once.
 */
export function sortOrder(list: PrefixList, byLength = true): Int32Array {
  const order = unsortedOrder(list, byLength);
  if (order !== null) return order;
  const identity = new Int32Array(list.count);
  for (let i = 0; i < identity.length; i++) identity[i] = i;
  return identity;
}

/**
 * sortOrder, or null when the list is in that order already: the caller then walks the list
 * itself and no index array is made (2.3 MB for the table's 565k IPv4 prefixes).
 */
export function unsortedOrder(list: PrefixList, byLength = true): Int32Array | null {
  if (isSorted(list, byLength)) return null;
  const n = list.count;
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  return n < RADIX_MIN ? comparisonSort(list, order) : radixSort(list, order, byLength);
}

/** True when the list is in order already (tables and feeds often are): no sort needed. */
function isSorted(list: PrefixList, byLength: boolean): boolean {
  const { words, lens, W } = list;
  if (W === 1) {
    // One comparison per prefix on numbers: 0.6 ms for the table's 565k IPv4 prefixes,
    // against 1.5 ms for the loop below.
    for (let i = 1; i < list.count; i++) {
      const a = words[i - 1]!;
      const b = words[i]!;
      if (a > b || (a === b && byLength && lens[i - 1]! > lens[i]!)) return false;
    }
    return true;
  }
  for (let i = 1; i < list.count; i++) {
    let c = 0;
    for (let w = 0; w < W && c === 0; w++) c = words[(i - 1) * W + w]! - words[i * W + w]!;
    if (c > 0 || (c === 0 && byLength && lens[i - 1]! > lens[i]!)) return false;
  }
  return true;
}

function comparisonSort(list: PrefixList, order: Int32Array): Int32Array {
  const { words, lens, W } = list;
  return order.sort((a, b) => {
    for (let w = 0; w < W; w++) {
      const x = words[a * W + w]!;
      const y = words[b * W + w]!;
      if (x !== y) return x < y ? -1 : 1;
    }
    return lens[a]! - lens[b]! || a - b;
  });
}

function radixSort(list: PrefixList, order: Int32Array, byLength: boolean): Int32Array {
  const { words, lens, W } = list;
  const n = list.count;
  const B = 65536;
  // Pass 0 is the length; passes 1.. are 16-bit digits from the least significant up.
  const passes = 1 + 2 * W;
  const counts = new Int32Array(passes * B);
  for (let i = 0; i < n; i++) {
    counts[lens[i]!]!++;
    for (let w = 0; w < W; w++) {
      const v = words[i * W + w]!;
      const p = 1 + 2 * (W - 1 - w);
      counts[p * B + (v & 0xffff)]!++;
      counts[(p + 1) * B + (v >>> 16)]!++;
    }
  }
  let from: Int32Array = order;
  let to: Int32Array = new Int32Array(n);
  for (let p = 0; p < passes; p++) {
    const base = p * B;
    let trivial = false;
    let sum = 0;
    for (let d = 0; d < B; d++) {
      const c = counts[base + d]!;
      if (c === n) trivial = true;
      counts[base + d] = sum;
      sum += c;
    }
    if (trivial || (p === 0 && !byLength)) continue;
    if (p === 0) {
      for (let k = 0; k < n; k++) {
        const i = from[k]!;
        to[counts[lens[i]!]!++] = i;
      }
    } else {
      const w = W - 1 - ((p - 1) >>> 1);
      const shift = (p - 1) & 1 ? 16 : 0;
      for (let k = 0; k < n; k++) {
        const i = from[k]!;
        const d = (words[i * W + w]! >>> shift) & 0xffff;
        to[counts[base + d]!++] = i;
      }
    }
    const t = from;
    from = to;
    to = t;
  }
  return from;
}

/**
 * sortOrder(list) when `list` is the concatenation of runs that are each in that order
 * already: runs[r] is where run r starts (ascending, runs[0] = 0). Neighbouring runs are merged
 * two by two until one is left, the left one first among equal prefixes, so that the order stays
 * stable: n·log2(k) steps. For the revision build's 20 modules (1.1M IPv4 prefixes) that
 * replaced the radix sort of everything that a scan of every run's head for each prefix left to
 * above 16 runs.
 */
export function mergedOrder(list: PrefixList, runs: readonly number[]): Int32Array {
  const n = list.count;
  let from = new Int32Array(n);
  for (let i = 0; i < n; i++) from[i] = i;
  let bounds = [...runs, n];
  let to = new Int32Array(bounds.length > 2 ? n : 0);
  while (bounds.length > 2) {
    const next = [0];
    for (let r = 0; r + 1 < bounds.length; r += 2) {
      if (r + 2 < bounds.length) {
        mergeTwo(list, from, to, bounds[r]!, bounds[r + 1]!, bounds[r + 2]!);
        next.push(bounds[r + 2]!);
      } else {
        to.set(from.subarray(bounds[r]!, bounds[r + 1]!), bounds[r]!);
        next.push(bounds[r + 1]!);
      }
    }
    bounds = next;
    const t = from;
    from = to;
    to = t;
  }
  return from;
}

/** Merges from[a..mid) and from[mid..b) (each in order) into to[a..b), the left first among equals. */
function mergeTwo(list: PrefixList, from: Int32Array, to: Int32Array, a: number, mid: number, b: number): void {
  const { words, lens, W } = list;
  let i = a;
  let j = mid;
  let o = a;
  if (W === 1) {
    while (i < mid && j < b) {
      const x = from[i]!;
      const y = from[j]!;
      const wx = words[x]!;
      const wy = words[y]!;
      if (wy < wx || (wy === wx && lens[y]! < lens[x]!)) {
        to[o++] = y;
        j++;
      } else {
        to[o++] = x;
        i++;
      }
    }
  } else {
    while (i < mid && j < b) {
      const x = from[i]!;
      const y = from[j]!;
      let c = 0;
      for (let w = 0; w < 4 && c === 0; w++) {
        const wx = words[x * 4 + w]!;
        const wy = words[y * 4 + w]!;
        if (wx !== wy) c = wy < wx ? -1 : 1;
      }
      if (c < 0 || (c === 0 && lens[y]! < lens[x]!)) {
        to[o++] = y;
        j++;
      } else {
        to[o++] = x;
        i++;
      }
    }
  }
  while (i < mid) to[o++] = from[i++]!;
  while (j < b) to[o++] = from[j++]!;
}

/**
 * The distinct prefixes of `list` in order by address, then length: `list` itself when it is
 * that already (no copy), else a new list. Each keeps a source text (PrefixList.src) when any
 * of its copies had one.
 */
export function sortedDistinct(list: PrefixList): PrefixList {
  const order = unsortedOrder(list);
  const { words, lens, W } = list;
  const n = list.count;
  if (order === null) {
    let dup = false;
    for (let i = 1; i < n && !dup; i++) dup = lens[i] === lens[i - 1] && sameWords(words, i, i - 1, W);
    if (!dup) return list;
  }
  const out = new PrefixList(list.family, Math.max(1, n));
  const inSrc = list.src;
  const src = inSrc !== null && list.source !== null ? out.trackSource(list.source) : null;
  const ow = out.words;
  const ol = out.lens;
  let m = 0;
  let prev = -1;
  for (let k = 0; k < n; k++) {
    const i = order === null ? k : order[k]!;
    if (prev >= 0 && lens[i] === lens[prev] && sameWords(words, i, prev, W)) {
      if (src !== null && src[m - 1]! < 0) src[m - 1] = inSrc![i]!;
      continue;
    }
    if (W === 1) ow[m] = words[i]!;
    else ow.set(words.subarray(i * 4, i * 4 + 4), m * 4);
    ol[m] = lens[i]!;
    if (src !== null) src[m] = inSrc![i]!;
    m++;
    prev = i;
  }
  out.count = m;
  return out;
}

function sameWords(words: Uint32Array, i: number, j: number, W: number): boolean {
  for (let w = 0; w < W; w++) if (words[i * W + w] !== words[j * W + w]) return false;
  return true;
}
