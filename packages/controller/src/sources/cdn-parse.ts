// Turns a fetched CDN feed into distinct canonical prefixes. Pure: no I/O.
// Host bits inside fetched data are masked, not rejected, since real feeds contain them.
// Hot: a refresh reads ~1.2M feed lines. A value already in canonical form (what feeds mostly
// hold) is kept as it is, told apart by the scanner that reads it once; anything else goes the
// way every value went before (parse, then format), which decides its text or why it is refused.
import { formatCidrValue, NOT_CANONICAL, parseCidrValue, scanIPv4Prefix, scanIPv6Prefix } from "@rlc/shared/prefix";
import { Ipv4PrefixSet } from "./ipv4-prefix-set.js";
import { evaluateJsonPath, type JsonPath, parseJsonPath } from "./json-path.js";

export type RejectReason = "not_an_address" | "bad_prefix_length" | "not_a_string";

export interface RejectedValue {
  /** The value as found (JSON-encoded when it is not a string), cut to 200 characters. */
  value: string;
  reason: RejectReason;
}

export interface FeedParseResult {
  /** Distinct prefixes, host bits cleared, canonical text, in order of first appearance; flat strings (no V8 cons string). */
  prefixes: string[];
  /** Values (not distinct) whose host bits were set. */
  masked: number;
  /** Values (not distinct) that are not an address or a CIDR. */
  rejected: number;
  /** The first 20 rejected values. */
  rejectedSample: RejectedValue[];
}

export class FeedParseError extends Error {
  override readonly name = "FeedParseError";
  readonly code = "feed_invalid_json" as const;
}

const SAMPLE_SIZE = 20;
const VALUE_CHARS = 200;

/** `expected`: about how many values the feed holds (the IPv4 set is made at that size). */
function collector(expected = 0) {
  // Distinct IPv4 prefixes by value (no string hashed per line: most of a feed's lines), the
  // rest by canonical text.
  const seen4 = new Ipv4PrefixSet(expected);
  const seen = new Set<string>();
  const result: FeedParseResult = { prefixes: [], masked: 0, rejected: 0, rejectedSample: [] };
  const reject = (value: string, reason: RejectReason) => {
    result.rejected++;
    if (result.rejectedSample.length < SAMPLE_SIZE) result.rejectedSample.push({ value: value.slice(0, VALUE_CHARS), reason });
  };
  // The scanners write the address's words here.
  const words = new Uint32Array(4);
  // Where result.prefixes holds a text formatted here (formatCidrValue's), made flat at the end.
  const formatted: number[] = [];
  const keepText = (text: string, made = false) => {
    if (!seen.has(text)) {
      seen.add(text);
      if (made) formatted.push(result.prefixes.length);
      result.prefixes.push(text);
    }
  };
  /** A canonical IPv4 prefix's value and its text (cut only when kept). */
  const keep4 = (network: number, length: number, text: string, from: number, to: number) => {
    if (seen4.add(network, length)) result.prefixes.push(text.slice(from, to));
  };
  /** `value` trimmed. */
  const add = (value: string) => {
    const v6 = value.indexOf(":") !== -1;
    const scanned = v6 ? scanIPv6Prefix(value, words, 0) : scanIPv4Prefix(value, words, 0);
    // Already canonical: its own text, and for IPv4 its value (words[0], the length scanned).
    if (scanned >= 0 && scanned < NOT_CANONICAL) {
      if (v6) keepText(value);
      else keep4(words[0]!, scanned, value, 0, value.length);
      return;
    }
    const parsed = parseCidrValue(value);
    if (!parsed.ok) return reject(value, parsed.code === "invalid_prefix_length" ? "bad_prefix_length" : "not_an_address");
    if (parsed.masked) result.masked++;
    const { cidr } = parsed;
    if (cidr.family === 6) return keepText(formatCidrValue(cidr), true);
    if (seen4.add(Number(cidr.network), cidr.length)) {
      formatted.push(result.prefixes.length);
      result.prefixes.push(formatCidrValue(cidr));
    }
  };
  /**
   * The result, every text flat: the values kept as they were are the feed's own (slices of its
   * text, or JSON's strings); the few formatted here (template literals: V8 cons strings, which
   * every later comparison walks piece by piece) are cut from one joined string.
   */
  const done = () => {
    if (formatted.length) {
      const flat = formatted
        .map((i) => result.prefixes[i]!)
        .join("\n")
        .split("\n");
      formatted.forEach((i, k) => {
        result.prefixes[i] = flat[k]!;
      });
    }
    return result;
  };
  return { add, keep4, words, reject, result, done };
}

/**
 * One prefix per line (LF, CRLF or CR); blank lines and `#` / `;` comments (whole-line or
 * trailing) are skipped; a leading byte-order mark is dropped. Each value is what
 * String#trim leaves of the line up to its comment; the lines are scanned in place rather than
 * split, and the ASCII blanks trimmed by hand (String#trim is left the rare value that ends in
 * another character, which may be a blank it knows).
 */
export function parseTextFeed(text: string): FeedParseResult {
  // At most one value a LINE_CHARS characters, but for short junk lines (an IPv4 /24 line is 11-19).
  // (Capped: a bigger feed's set grows from there as any other.)
  const { add, keep4, words, done } = collector(Math.min(1_000_000, Math.ceil(text.length / LINE_CHARS)));
  const n = text.length;
  let i = n > 0 && text.charCodeAt(0) === 0xfeff ? 1 : 0;
  // A feed with no comment and no CR anywhere (most) has its lines found by indexOf, not
  // character by character: the same ends, ~3 ms less for a 55k-line feed.
  const plain = text.indexOf("#") === -1 && text.indexOf(";") === -1 && text.indexOf("\r") === -1;
  while (i < n) {
    let end = i;
    let comment = -1;
    if (plain) {
      end = text.indexOf("\n", i);
      if (end === -1) end = n;
    } else {
      for (; end < n; end++) {
        const c = text.charCodeAt(end);
        if (c === 10 || c === 13) break;
        if (comment === -1 && (c === 35 || c === 59)) comment = end;
      }
    }
    let start = i;
    let stop = comment === -1 ? end : comment;
    i = end + (text.charCodeAt(end) === 13 && text.charCodeAt(end + 1) === 10 ? 2 : 1);
    while (start < stop && isAsciiBlank(text.charCodeAt(start))) start++;
    while (stop > start && isAsciiBlank(text.charCodeAt(stop - 1))) stop--;
    if (start === stop) continue;
    // A canonical IPv4 prefix (most of a feed's lines) read where it is, cut only when kept: what
    // add() does with it, without a string per line (ASCII only, so nothing String#trim would cut).
    const scanned = scanIPv4Prefix(text, words, 0, start, stop);
    if (scanned >= 0 && scanned < NOT_CANONICAL) {
      keep4(words[0]!, scanned, text, start, stop);
      continue;
    }
    const value = text.charCodeAt(start) < 128 && text.charCodeAt(stop - 1) < 128 ? text.slice(start, stop) : text.slice(start, stop).trim();
    if (value !== "") add(value);
  }
  return done();
}

/** Characters of a short feed line (what the set's size is reckoned from): `1.2.3.0/24` and its line end. */
const LINE_CHARS = 11;

/** Tab, vertical tab, form feed, space: the ASCII characters String#trim removes within a line. */
const isAsciiBlank = (c: number) => c === 32 || c === 9 || c === 11 || c === 12;

/**
 * Picks values with a json_path; each must be a string or an array of strings. Throws
 * FeedParseError when the text is not JSON, JsonPathError when a path given as text is malformed.
 */
export function parseJsonFeed(text: string, path: string | JsonPath): FeedParseResult {
  const compiled = typeof path === "string" ? parseJsonPath(path) : path;
  let document: unknown;
  try {
    document = JSON.parse(text.replace(/^\uFEFF/, ""));
  } catch (cause) {
    throw new FeedParseError(`the feed is not valid JSON: ${(cause as Error).message}`, { cause });
  }
  const { add, reject, done } = collector();
  const take = (value: unknown) => {
    if (typeof value === "string") add(value.trim());
    else reject(JSON.stringify(value) ?? String(value), "not_a_string");
  };
  for (const value of evaluateJsonPath(compiled, document)) {
    if (Array.isArray(value)) for (const element of value) take(element);
    else take(value);
  }
  return done();
}
