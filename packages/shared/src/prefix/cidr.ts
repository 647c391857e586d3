import { type Family, formatIPv4, formatIPv6, parseIPv4Into, parseIPv6Into, wordCount } from "./address.js";
import { PrefixError } from "./errors.js";
import { appendRangeCidrs, clearHostBits, compareWords, containsWords } from "./words.js";

/** An IPv4 or IPv6 address: one 32-bit word for IPv4, four for IPv6, most significant first. */
export interface Address {
  readonly family: Family;
  readonly words: Uint32Array;
}

/** A CIDR prefix: its network address (host bits clear) and its length. */
export interface Prefix extends Address {
  /** 0..32 for IPv4, 0..128 for IPv6. */
  readonly length: number;
}

/** A parsed CIDR, with whether host bits had to be cleared (`mode: "mask"` only). */
export interface ParsedCidr extends Prefix {
  readonly masked: boolean;
}

export interface ParseCidrOptions {
  /**
   * `strict` (user input, the default) refuses host bits and names the network;
   * `mask` (fetched feeds) clears them and reports `masked: true`.
   */
  readonly mode?: "strict" | "mask";
}

/** Added to the length that `parsePrefixInto` returns when it cleared host bits. */
export const HOST_BITS_CLEARED = 256;

const LENGTH_REASON = "prefix length";

/**
 * Family of an address or CIDR text by its form (a colon means IPv6). It does not validate:
 * parse the text when it comes from outside.
 */
export function familyOf(text: string): Family {
  return text.indexOf(":") >= 0 ? 6 : 4;
}

/**
 * Parses an address or CIDR of `family` into `out[off ..]`, clearing host bits. Returns the
 * length (plus HOST_BITS_CLEARED when it cleared any) or the reason the text is refused.
 * A bare address is a /32 or /128.
 */
export function parsePrefixInto(text: string, family: Family, out: Uint32Array, off: number): number | string {
  if (text.length === 0) return "empty value";
  const slash = text.indexOf("/");
  const end = slash < 0 ? text.length : slash;
  const reason = family === 4 ? parseIPv4Into(text, 0, end, out, off) : parseIPv6Into(text, 0, end, out, off);
  if (reason !== null) return reason;
  const max = family === 4 ? 32 : 128;
  if (slash < 0) return max;
  if (slash === text.length - 1) return `${LENGTH_REASON} is missing after /`;
  let len = 0;
  for (let i = slash + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) {
      return c === 32 || c === 9 ? "spaces are not allowed" : `${LENGTH_REASON} must be a decimal number`;
    }
    if (i === slash + 2 && len === 0) return `${LENGTH_REASON} has a leading zero`;
    len = len * 10 + (c - 48);
    if (len > max) return `${LENGTH_REASON} must be 0..${max} for IPv${family}`;
  }
  return clearHostBits(out, off, wordCount(family), len) ? len + HOST_BITS_CLEARED : len;
}

/**
 * parsePrefixInto for IPv4 in one pass over the text, for bulk input: the length (plus
 * HOST_BITS_CLEARED when host bits were cleared), or -1 when the text is refused (ask
 * parsePrefixInto for the reason).
 */
export function parseIPv4PrefixFast(text: string, out: Uint32Array, off: number): number {
  const n = text.length;
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  let i = 0;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    const d = c - 48;
    if (d >= 0 && d <= 9) {
      if (digits === 1 && part === 0) return -1;
      part = part * 10 + d;
      digits++;
      if (part > 255) return -1;
    } else if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      dots++;
      part = 0;
      digits = 0;
    } else if (c === 47) {
      break;
    } else {
      return -1;
    }
  }
  if (digits === 0 || dots !== 3) return -1;
  value = value * 256 + part;
  let len = 32;
  if (i < n) {
    const first = ++i;
    if (first === n) return -1;
    len = 0;
    for (; i < n; i++) {
      const d = text.charCodeAt(i) - 48;
      if (d < 0 || d > 9 || (i > first && len === 0)) return -1;
      len = len * 10 + d;
      if (len > 32) return -1;
    }
  }
  const network = len === 32 ? value : len === 0 ? 0 : (value & ~(0xffffffff >>> len)) >>> 0;
  out[off] = network;
  return network === value ? len : len + HOST_BITS_CLEARED;
}

function refuse(text: string, reason: string): PrefixError {
  const code = reason.startsWith(LENGTH_REASON) ? "invalid_prefix_length" : "invalid_address";
  return new PrefixError(code, text, reason);
}

/** Parses an IPv4 or IPv6 address (every RFC 4291 text form; no prefix length). */
export function parseAddress(text: string): Address {
  if (text.indexOf("/") >= 0) throw refuse(text, "an address has no prefix length");
  const family = familyOf(text);
  const words = new Uint32Array(wordCount(family));
  const result = parsePrefixInto(text, family, words, 0);
  if (typeof result === "string") throw refuse(text, result);
  return { family, words };
}

/**
 * Parses a CIDR or a bare address (a /32 or /128). Strict mode refuses host bits with a
 * message naming the network (`10.0.0.1/8` → "host bits set; did you mean 10.0.0.0/8").
 */
export function parseCidr(text: string, options: ParseCidrOptions = {}): ParsedCidr {
  const family = familyOf(text);
  const words = new Uint32Array(wordCount(family));
  const result = parsePrefixInto(text, family, words, 0);
  if (typeof result === "string") throw refuse(text, result);
  const masked = result >= HOST_BITS_CLEARED;
  const length = masked ? result - HOST_BITS_CLEARED : result;
  const parsed = { family, words, length, masked };
  if (masked && options.mode !== "mask") {
    const network = formatPrefix(parsed);
    throw new PrefixError("host_bits_set", text, `host bits set; did you mean ${network}`, network);
  }
  return parsed;
}

/** Canonical text of an address: dotted quad, or RFC 5952 for IPv6. */
export function formatAddress(address: Address): string {
  return address.family === 4 ? formatIPv4(address.words, 0) : formatIPv6(address.words, 0);
}

/** Canonical text of a prefix, always with its length (`10.0.0.0/8`, `2001:db8::/32`). */
export function formatPrefix(prefix: Prefix): string {
  return `${formatAddress(prefix)}/${prefix.length}`;
}

/** The canonical form of a CIDR or bare address text; strict by default (see parseCidr). */
export function canonicalCidr(text: string, options: ParseCidrOptions = {}): string {
  return formatPrefix(parseCidr(text, options));
}

function asPrefix(value: string | Prefix): Prefix {
  return typeof value === "string" ? parseCidr(value, { mode: "mask" }) : value;
}

function asAddress(value: string | Address): Address {
  return typeof value === "string" ? parseAddress(value) : value;
}

/** True when `address` lies inside `prefix` (false across families). */
export function containsAddress(prefix: string | Prefix, address: string | Address): boolean {
  const p = asPrefix(prefix);
  const a = asAddress(address);
  return p.family === a.family && containsWords(p.words, 0, p.length, a.words, 0, wordCount(p.family));
}

/** True when `inner` lies wholly inside `outer` (equal counts; false across families). */
export function containsPrefix(outer: string | Prefix, inner: string | Prefix): boolean {
  const o = asPrefix(outer);
  const i = asPrefix(inner);
  return o.family === i.family && o.length <= i.length && containsWords(o.words, 0, o.length, i.words, 0, wordCount(o.family));
}

/**
 * The fewest CIDRs covering the addresses first..last (inclusive), in order, as canonical
 * text; for `start,end` rows such as ip-location-db's.
 */
export function rangeToCidrs(first: string | Address, last: string | Address): string[] {
  const s = asAddress(first);
  const e = asAddress(last);
  const W = wordCount(s.family);
  if (s.family !== e.family) throw new PrefixError("invalid_address", `${first}-${last}`, "a range cannot mix IPv4 and IPv6");
  if (compareWords(s.words, 0, e.words, 0, W) > 0) {
    throw new PrefixError("invalid_address", `${first}-${last}`, "a range must not end before it starts");
  }
  const out: string[] = [];
  const start = s.words.slice();
  appendRangeCidrs(start, 0, e.words, 0, W, {
    push(words, off, length) {
      out.push(formatPrefix({ family: s.family, words: words.slice(off, off + W), length }));
    },
  });
  return out;
}
