// Addresses and CIDRs as (family, bigint) values, for callers that do arithmetic on them: the
// IPv4 address carried inside an IPv6 form, ranges stored as numbers, ordering by value.
// Reading and writing the text is cidr.ts's and ranges are split by words.ts, so there is one
// parser, one canonical text and one range splitter; this file only turns words into bigints
// and back, and never throws on bad input (fetched feeds and resolver answers are full of it).
import { type Family, wordCount } from "./address.js";
import { containsAddress, formatAddress, formatPrefix, parseAddress, parseCidr } from "./cidr.js";
import { PrefixError, type PrefixErrorCode } from "./errors.js";
import { appendRangeCidrs } from "./words.js";

/** An IPv4 or IPv6 address as one number. */
export interface IpValue {
  readonly family: Family;
  readonly value: bigint;
}

/** A CIDR as its network (host bits clear) and its length. */
export interface CidrValue {
  readonly family: Family;
  readonly network: bigint;
  readonly length: number;
}

/** parseCidrValue's answer: the CIDR and whether host bits were cleared, or why the text is refused. */
export type CidrValueParse = { ok: true; cidr: CidrValue; masked: boolean } | { ok: false; code: PrefixErrorCode; message: string };

/** 32 for IPv4, 128 for IPv6. */
export const bitsOf = (family: Family): 32 | 128 => (family === 4 ? 32 : 128);

/** The number the 32-bit words stand for, most significant word first. */
export function wordsToValue(words: ArrayLike<number>, off = 0, count = words.length - off): bigint {
  let value = 0n;
  for (let w = 0; w < count; w++) value = (value << 32n) | BigInt(words[off + w]!);
  return value;
}

/** The 32-bit words of `value` (one for IPv4, four for IPv6), most significant first. */
export function valueToWords(family: Family, value: bigint): Uint32Array {
  const count = wordCount(family);
  const words = new Uint32Array(count);
  for (let w = count - 1; w >= 0; w--, value >>= 32n) words[w] = Number(value & 0xffffffffn);
  return words;
}

/** An address (every RFC 4291 form; no length, no zone id), or null when the text is not one. */
export function parseIpValue(text: string): IpValue | null {
  try {
    const address = parseAddress(text);
    return { family: address.family, value: wordsToValue(address.words) };
  } catch (error) {
    if (error instanceof PrefixError) return null;
    throw error;
  }
}

/**
 * A CIDR or a bare address (a /32 or /128) with its host bits cleared, for fetched data where
 * host bits are masked rather than refused; `masked` says whether any were set.
 */
export function parseCidrValue(text: string): CidrValueParse {
  try {
    const parsed = parseCidr(text, { mode: "mask" });
    const cidr = { family: parsed.family, network: wordsToValue(parsed.words), length: parsed.length };
    return { ok: true, cidr, masked: parsed.masked };
  } catch (error) {
    if (error instanceof PrefixError) return { ok: false, code: error.code, message: error.message };
    throw error;
  }
}

/** Canonical text of an address (see formatAddress). */
export function formatIpValue(ip: IpValue): string {
  return formatAddress({ family: ip.family, words: valueToWords(ip.family, ip.value) });
}

/** Canonical text of a CIDR, always with its length (see formatPrefix). */
export function formatCidrValue(cidr: CidrValue): string {
  return formatPrefix({ family: cidr.family, words: valueToWords(cidr.family, cidr.network), length: cidr.length });
}

/** True when `ip` lies inside `cidr` (false across families). */
export function cidrValueContains(cidr: CidrValue, ip: IpValue): boolean {
  const prefix = { family: cidr.family, words: valueToWords(cidr.family, cidr.network), length: cidr.length };
  return containsAddress(prefix, { family: ip.family, words: valueToWords(ip.family, ip.value) });
}

/** Appends to `out` the fewest CIDRs that cover exactly [start, end] (start <= end), in order. */
export function appendRangeCidrValues(family: Family, start: bigint, end: bigint, out: CidrValue[]): void {
  const W = wordCount(family);
  appendRangeCidrs(valueToWords(family, start), 0, valueToWords(family, end), 0, W, {
    push(words, off, length) {
      out.push({ family, network: wordsToValue(words, off, W), length });
    },
  });
}
