// Turns a fetched CDN feed into distinct canonical prefixes. Pure: no I/O.
// Host bits inside fetched data are masked, not rejected, since real feeds contain them.
import { formatCidrValue, parseCidrValue } from "@rlc/shared/prefix";
import { evaluateJsonPath, type JsonPath, parseJsonPath } from "./json-path.js";

export type RejectReason = "not_an_address" | "bad_prefix_length" | "not_a_string";

export interface RejectedValue {
  /** The value as found (JSON-encoded when it is not a string), cut to 200 characters. */
  value: string;
  reason: RejectReason;
}

export interface FeedParseResult {
  /** Distinct prefixes, host bits cleared, canonical text, in order of first appearance. */
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

function collector() {
  const seen = new Set<string>();
  const result: FeedParseResult = { prefixes: [], masked: 0, rejected: 0, rejectedSample: [] };
  const reject = (value: string, reason: RejectReason) => {
    result.rejected++;
    if (result.rejectedSample.length < SAMPLE_SIZE) result.rejectedSample.push({ value: value.slice(0, VALUE_CHARS), reason });
  };
  const add = (value: string) => {
    const parsed = parseCidrValue(value);
    if (!parsed.ok) return reject(value, parsed.code === "invalid_prefix_length" ? "bad_prefix_length" : "not_an_address");
    if (parsed.masked) result.masked++;
    const text = formatCidrValue(parsed.cidr);
    if (!seen.has(text)) {
      seen.add(text);
      result.prefixes.push(text);
    }
  };
  return { add, reject, result };
}

/** One prefix per line; blank lines and `#` / `;` comments (whole-line or trailing) are skipped. */
export function parseTextFeed(text: string): FeedParseResult {
  const { add, result } = collector();
  for (const line of text.replace(/^\uFEFF/, "").split(/\r\n|\n|\r/)) {
    const comment = line.search(/[#;]/);
    const value = (comment === -1 ? line : line.slice(0, comment)).trim();
    if (value !== "") add(value);
  }
  return result;
}

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
  const { add, reject, result } = collector();
  const take = (value: unknown) => {
    if (typeof value === "string") add(value.trim());
    else reject(JSON.stringify(value) ?? String(value), "not_a_string");
  };
  for (const value of evaluateJsonPath(compiled, document)) {
    if (Array.isArray(value)) for (const element of value) take(element);
    else take(value);
  }
  return result;
}
