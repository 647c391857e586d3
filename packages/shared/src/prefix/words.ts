// Arithmetic on addresses held as W 32-bit words (W = 1 for IPv4, 4 for IPv6), most
// significant word first, inside larger Uint32Arrays. Every function takes the array and the
// offset, so the bulk algorithms work in place without an object per address.

const TWO_32 = 4294967296;

/**
 * POW2[k] = 2 ** k for k = 0..32. `2 ** k` with a variable k is a call to pow() in optimised
 * code; the table is a load (appendRangeCidrs4 over the intervals of the bench's 565k IPv4
 * prefixes: 1.7 ms, against 6.5 ms with `2 ** k`).
 */
export const POW2: Float64Array = Float64Array.from({ length: 33 }, (_, k) => 2 ** k);

/** The bits of word `w` that lie inside a prefix of length `len`. */
export function maskWord(len: number, w: number): number {
  const bits = len - 32 * w;
  if (bits >= 32) return 0xffffffff;
  if (bits <= 0) return 0;
  return (0xffffffff << (32 - bits)) >>> 0;
}

/** Clears the host bits of a prefix of length `len`; true when any were set. */
export function clearHostBits(words: Uint32Array, off: number, W: number, len: number): boolean {
  let had = false;
  for (let w = 0; w < W; w++) {
    const v = words[off + w]!;
    const masked = (v & maskWord(len, w)) >>> 0;
    if (masked !== v) {
      had = true;
      words[off + w] = masked;
    }
  }
  return had;
}

/** Unsigned comparison of two W-word values. */
export function compareWords(a: Uint32Array, ai: number, b: Uint32Array, bi: number, W: number): number {
  for (let w = 0; w < W; w++) {
    const x = a[ai + w]!;
    const y = b[bi + w]!;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

export function copyWords(src: Uint32Array, si: number, dst: Uint32Array, di: number, W: number): void {
  for (let w = 0; w < W; w++) dst[di + w] = src[si + w]!;
}

/** dst = the last address of the prefix src/len. */
export function setLastAddress(src: Uint32Array, si: number, len: number, W: number, dst: Uint32Array, di: number): void {
  for (let w = 0; w < W; w++) dst[di + w] = (src[si + w]! | ~maskWord(len, w)) >>> 0;
}

/** True when `next` is `prev + 1`. */
export function isSuccessor(prev: Uint32Array, pi: number, next: Uint32Array, ni: number, W: number): boolean {
  // prev + 1 flips prev's trailing one bits to zero and the lowest zero bit to one.
  let w = W - 1;
  while (w >= 0 && prev[pi + w] === 0xffffffff) {
    if (next[ni + w] !== 0) return false;
    w--;
  }
  if (w < 0) return false; // prev is the last address: nothing follows it
  if (next[ni + w] !== prev[pi + w]! + 1) return false;
  for (let k = 0; k < w; k++) if (next[ni + k] !== prev[pi + k]) return false;
  return true;
}

/** v += 1 (wrapping); returns false when it wrapped around. */
export function increment(v: Uint32Array, vi: number, W: number): boolean {
  for (let w = W - 1; w >= 0; w--) {
    if (v[vi + w] !== 0xffffffff) {
      v[vi + w] = v[vi + w]! + 1;
      return true;
    }
    v[vi + w] = 0;
  }
  return false;
}

/** v -= 1 (wrapping). */
export function decrement(v: Uint32Array, vi: number, W: number): void {
  for (let w = W - 1; w >= 0; w--) {
    if (v[vi + w] !== 0) {
      v[vi + w] = v[vi + w]! - 1;
      return;
    }
    v[vi + w] = 0xffffffff;
  }
}

/** True when the prefix q/qlen contains the address (or prefix start) y. */
export function containsWords(q: Uint32Array, qi: number, qlen: number, y: Uint32Array, yi: number, W: number): boolean {
  for (let w = 0; w < W; w++) {
    const m = maskWord(qlen, w);
    if (m === 0) return true;
    if ((y[yi + w]! & m) >>> 0 !== q[qi + w]) return false;
  }
  return true;
}

/** True when a/len and b/len are the lower and upper halves of one prefix of length len - 1. */
export function isLowerSibling(a: Uint32Array, ai: number, b: Uint32Array, bi: number, len: number, W: number): boolean {
  if (len === 0) return false;
  const bw = (len - 1) >>> 5;
  const bit = POW2[31 - ((len - 1) & 31)]!;
  for (let w = 0; w < W; w++) {
    const x = a[ai + w]!;
    const y = b[bi + w]!;
    if (w === bw) {
      if ((x & bit) !== 0) return false;
      if (y !== x + bit) return false;
    } else if (x !== y) {
      return false;
    }
  }
  return true;
}

function trailingZeros(v: Uint32Array, vi: number, W: number, invert: boolean): number {
  for (let w = W - 1; w >= 0; w--) {
    const x = invert ? ~v[vi + w]! : v[vi + w]!;
    if (x !== 0) return 32 * (W - 1 - w) + 31 - Math.clz32(x & -x);
  }
  return 32 * W;
}

/** Receives the CIDRs that `appendRangeCidrs` produces. */
export interface PrefixSink {
  push(words: Uint32Array, off: number, len: number): void;
}

/**
 * Appends to `sink` the fewest CIDRs that cover exactly [s, e] (s <= e), in address order.
 * `s` is used as scratch. Each block is the largest aligned one that starts at s and ends
 * by e: its size 2^k is bounded by s's trailing zeros and by the highest bit d where s and e
 * differ (2^(d+1) when e's bits 0..d are all ones, else 2^d).
 */
export function appendRangeCidrs(s: Uint32Array, si: number, e: Uint32Array, ei: number, W: number, sink: PrefixSink): void {
  const bits = 32 * W;
  for (;;) {
    let d = -1;
    for (let w = 0; w < W; w++) {
      const x = (s[si + w]! ^ e[ei + w]!) >>> 0;
      if (x !== 0) {
        d = 32 * (W - 1 - w) + 31 - Math.clz32(x);
        break;
      }
    }
    let k = 0;
    if (d >= 0) {
      const ones = trailingZeros(e, ei, W, true);
      k = Math.min(trailingZeros(s, si, W, false), ones > d ? d + 1 : d);
    }
    sink.push(s, si, bits - k);
    if (k === d + 1) return; // the block ended exactly at e (also covers s === e, k = 0)
    // s += 2^k (no overflow: the block ended before e)
    let w = W - 1 - (k >>> 5);
    let add = POW2[k & 31]!;
    for (; w >= 0; w--) {
      const v = s[si + w]! + add;
      if (v < TWO_32) {
        s[si + w] = v;
        break;
      }
      s[si + w] = v - TWO_32;
      add = 1;
    }
  }
}
