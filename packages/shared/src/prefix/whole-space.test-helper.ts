// The whole address space on bigints, for the prefix property tests (not part of the build):
// words and lengths chosen near 32-bit word edges catch carries, borrows and masks between
// words that the small space of small-space.test-helper.ts cannot reach.
import fc from "fast-check";
import { parseCidr } from "./index.js";
import type { Fam } from "./small-space.test-helper.js";

/** A prefix anywhere in the address space: its family, its words (host bits and all) and its length. */
export interface Wide {
  fam: Fam;
  words: number[];
  len: number;
}

const edgeWord = fc.oneof(fc.constantFrom(0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff), fc.nat(0xffffffff));
const edgeLen = (max: number) =>
  fc.oneof(
    fc.constantFrom(0, 1, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128).map((l) => Math.min(l, max)),
    fc.nat(max),
  );
export const widePrefix: fc.Arbitrary<Wide> = fc.oneof(
  fc.record({ fam: fc.constant<Fam>(4), words: fc.array(edgeWord, { minLength: 1, maxLength: 1 }), len: edgeLen(32) }),
  fc.record({ fam: fc.constant<Fam>(6), words: fc.array(edgeWord, { minLength: 4, maxLength: 4 }), len: edgeLen(128) }),
);

const bits = (fam: Fam) => (fam === 4 ? 32n : 128n);
const bigintOf = (words: ArrayLike<number>) => Array.from(words).reduce((v, w) => (v << 32n) | BigInt(w), 0n);

/** The text of a wide prefix, every group written out. */
export function wideText(p: Wide): string {
  if (p.fam === 4) return `${[24, 16, 8, 0].map((s) => (p.words[0]! >>> s) & 255).join(".")}/${p.len}`;
  return `${p.words.flatMap((w) => [(w >>> 16).toString(16), (w & 0xffff).toString(16)]).join(":")}/${p.len}`;
}

/** The first and last address of a wide prefix. */
export function wideRange(p: Wide): readonly [bigint, bigint] {
  const host = (1n << (bits(p.fam) - BigInt(p.len))) - 1n;
  const start = bigintOf(p.words) & ~host;
  return [start, start | host];
}

/** The fewest CIDRs covering s..e, appended to `out` as `family|network|length` keys. */
export function rangeKeys(fam: Fam, s: bigint, e: bigint, out: string[] = []): string[] {
  const B = bits(fam);
  while (s <= e) {
    let k = B;
    while (k > 0n && (s % (1n << k) !== 0n || s + (1n << k) - 1n > e)) k--;
    out.push(`${fam}|${s}|${B - k}`);
    s += 1n << k;
  }
  return out;
}

/** The `family|network|length` key of a CIDR text that the code under test wrote. */
export function keyOfText(t: string): string {
  const p = parseCidr(t);
  return `${p.family}|${bigintOf(p.words)}|${p.length}`;
}

/** Orders [start, end] pairs by start. */
export const byStart = (a: readonly [bigint, bigint], b: readonly [bigint, bigint]) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0);
