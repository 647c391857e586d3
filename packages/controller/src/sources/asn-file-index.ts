// The offline ASN table of `ASN_SOURCE=file:<path>`, read once into a map from
// ASN to address ranges. The format is told apart per line, so files of either kind may be
// concatenated:
//   - iptoasn / ip-location-db: `start,end,asn[,...]` (or tab-separated, as iptoasn's .tsv), an
//     inclusive range given as two addresses or as two decimal numbers. Numbers that both fit in
//     32 bits are IPv4, larger ones IPv6 (the `-num` files keep the families apart, and no IPv6
//     range sits below 2^32).
//   - CAIDA pfx2as: `prefix<TAB>length<TAB>asn`, where asn may be `a_b` (several origins) or
//     `a,b` (an AS set); the prefix is listed under each.
// ASN 0 (iptoasn's "Not routed") is skipped. Blank lines and `#` comments are skipped; other
// lines that fit neither form are counted as rejected (a CSV header, for one).
//
// Ranges are kept in typed columns (asn-ranges.ts: IPv4 bounds as numbers, IPv6 ones as two
// 64-bit halves) and turned into CIDRs on lookup, which costs little for one ASN and keeps the index small. Lines
// are read in place (text-lines.ts) and ip-location-db's IPv4 rows by scanIPv4Row without a
// string or regex per row; every other line goes to parseRow. Measured on @ip-location-db/asn
// (asn-ipv4.csv and asn-ipv6.csv, 412k + 103k rows) on a loaded 2-core machine, interleaved
// with the load before this (readline, trim and parseRow per row, a JS array per ASN): ~0.9 s
// against ~1.8 s; 10 large ASNs' prefixes 21 ms against 50 ms. (A split/map/regex line parser
// took 3x as long as parseRow; parseRow is written for speed because of it.)
import { createReadStream } from "node:fs";
import { appendRangeCidrValues, type CidrValue, type Family, formatCidrValue, parseIpValue } from "@rlc/shared/prefix";
import { AsnSourceError } from "./asn-errors.js";
import { Ipv4AsnRanges, Ipv6AsnRanges } from "./asn-ranges.js";
import { eachLine } from "./text-lines.js";

export interface AsnFileIndex {
  /** Canonical CIDRs covering the ranges listed for `asn`, IPv4 first, sorted; [] when absent. */
  prefixesOf(asn: number): string[];
  readonly stats: { rows: number; rejected: number; asns: number };
}

interface Row {
  family: Family;
  start: number | bigint;
  end: number | bigint;
  asns: number[];
}

const MAX_V4 = 0xffffffff;
const MAX_V6 = (1n << 128n) - 1n;
const MAX_ASN = 4294967295;

export async function loadAsnFileIndex(paths: readonly string[]): Promise<AsnFileIndex> {
  // Both families in typed columns, grouped by ASN once loaded (asn-ranges.ts).
  const v4 = new Ipv4AsnRanges();
  const v6 = new Ipv6AsnRanges();
  let rows = 0;
  let rejected = 0;
  let firstRejected: string | undefined;

  for (const path of paths) {
    const stream = createReadStream(path, { encoding: "utf8", highWaterMark: 1 << 20 });
    const opened = new Promise<void>((resolve, reject) => {
      stream.once("open", () => resolve());
      stream.once("error", reject);
    });
    try {
      await opened;
    } catch (err) {
      throw new AsnSourceError("asn_file_unreadable", `cannot read ASN file ${path}: ${(err as Error).message}`, { cause: err });
    }
    let lineNumber = 0;
    await eachLine(stream, (chunk, start, end) => {
      lineNumber++;
      const asn = scanIPv4Row(chunk, start, end);
      if (asn >= 0) {
        rows++;
        if (asn !== 0) v4.add(asn, rowStart, rowEnd);
        return;
      }
      const text = chunk.slice(start, end).trim();
      if (text === "" || text.startsWith("#")) return;
      const row = parseRow(text);
      if (row === null) {
        rejected++;
        firstRejected ??= `${path}:${lineNumber}: ${text.slice(0, 100)}`;
        return;
      }
      rows++;
      for (const asn of row.asns) {
        if (row.family === 4) v4.add(asn, row.start as number, row.end as number);
        else v6.add(asn, row.start as bigint, row.end as bigint);
      }
    });
  }
  if (rows === 0) {
    const hint = firstRejected ? ` (first rejected line ${firstRejected})` : "";
    throw new AsnSourceError("asn_source_malformed", `no ASN rows in ${paths.join(", ")}${hint}`);
  }

  const asns = new Set([...v4.keys(), ...v6.keys()]).size;
  return {
    stats: { rows, rejected, asns },
    prefixesOf(asn) {
      // IPv4 first, as canonicalCidrs sorts them.
      const out = v4.prefixesOf(asn);
      const ranges6 = v6.rangesOf(asn);
      if (!ranges6.length) return out;
      const cidrs: CidrValue[] = [];
      for (let i = 0; i < ranges6.length; i += 2) appendRangeCidrValues(6, ranges6[i]!, ranges6[i + 1]!, cidrs);
      for (const text of canonicalCidrs(cidrs)) out.push(text);
      return out;
    },
  };
}

/** The range scanIPv4Row read last, and where its scanners stopped (past a field's comma). */
let rowStart = 0;
let rowEnd = 0;
let at = 0;

/**
 * An IPv4 row of ip-location-db read in place: `start,end,asn`, then `,` or the line's end, the
 * range as two dotted quads or two decimal numbers (the `-num` form), start <= end, the ASN
 * within 32 bits. Answers the ASN (0 included) and leaves the range in rowStart and rowEnd, or
 * -1 for any other line, which parseRow then reads: what this takes, parseRow takes alike (a
 * property test holds it to that), so it only saves parseRow's slices and regexes.
 */
export function scanIPv4Row(text: string, start: number, end: number): number {
  let first = scanQuad(text, start, end);
  let second: number;
  if (first >= 0) second = scanQuad(text, at, end);
  else {
    first = scanDecimal(text, start, end, true);
    if (first < 0) return -1;
    second = scanDecimal(text, at, end, true);
  }
  if (second < 0 || second > MAX_V4 || first > second) return -1;
  const asn = scanDecimal(text, at, end, false);
  if (asn < 0 || asn > MAX_ASN) return -1;
  rowStart = first;
  rowEnd = second;
  return asn;
}

/** A dotted quad at `i` ended by a comma (parts 0..255, no leading zeros, as parseV4 wants); -1 otherwise. */
function scanQuad(text: string, i: number, end: number): number {
  let value = 0;
  for (let q = 0; q < 4; q++) {
    if (i >= end) return -1;
    let part = text.charCodeAt(i++) - 48;
    if (part >>> 0 > 9) return -1;
    // After a leading zero the next character must end the part (the check below refuses a digit).
    for (let k = 0; part !== 0 && k < 2 && i < end; k++) {
      const d = text.charCodeAt(i) - 48;
      if (d >>> 0 > 9) break;
      part = part * 10 + d;
      i++;
    }
    if (part > 255 || i >= end || text.charCodeAt(i++) !== (q < 3 ? 46 : 44)) return -1;
    value = value * 256 + part;
  }
  at = i;
  return value;
}

/**
 * 1 to 10 decimal digits at `i`, ended by a comma, or (unless `comma`) by the line's end; -1
 * otherwise.
 */
function scanDecimal(text: string, i: number, end: number, comma: boolean): number {
  const from = i;
  let value = 0;
  for (; i < end; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d >>> 0 > 9) break;
    value = value * 10 + d;
  }
  if (i === from || i - from > 10) return -1;
  if (i === end) return comma ? -1 : value;
  if (text.charCodeAt(i) !== 44) return -1;
  at = i + 1;
  return value;
}

/** One data line in either format, or null when it is neither. Hot: runs once per row. */
export function parseRow(line: string): Row | null {
  const tab = line.indexOf("\t");
  const comma = line.indexOf(",");
  const separator = tab !== -1 && (comma === -1 || tab < comma) ? "\t" : ",";
  const end1 = line.indexOf(separator);
  const end2 = end1 === -1 ? -1 : line.indexOf(separator, end1 + 1);
  if (end2 === -1) return null;
  let end3 = line.indexOf(separator, end2 + 1);
  if (end3 === -1) end3 = line.length;
  const a = field(line, 0, end1);
  const b = field(line, end1 + 1, end2);
  const asns = parseAsns(field(line, end2 + 1, end3));
  if (asns === null) return null;
  const family = a.includes(":") ? 6 : a.includes(".") ? 4 : 0;
  const range = family === 0 ? numericRange(a, b) : PREFIX_LENGTH.test(b) ? prefixRange(family, a, Number(b)) : addressRange(family, a, b);
  if (range === null) return null;
  range.asns = asns;
  return range;
}

const PREFIX_LENGTH = /^\d{1,3}$/;
const DIGITS = /^\d+$/;
const ONE_ASN = /^\d{1,10}$/;

function field(line: string, start: number, end: number): string {
  const text = line.slice(start, end).trim();
  return text.length >= 2 && text.charCodeAt(0) === 34 && text.charCodeAt(text.length - 1) === 34 ? text.slice(1, -1).trim() : text;
}

/** `13335`, `13335_209242`, `13335,209242`; ASN 0 is dropped, so a not-routed row has none. */
function parseAsns(text: string): number[] | null {
  if (ONE_ASN.test(text)) {
    const asn = Number(text);
    return asn > MAX_ASN ? null : asn === 0 ? [] : [asn];
  }
  const asns: number[] = [];
  for (const part of text.split(/[_,]/)) {
    if (!ONE_ASN.test(part)) return null;
    const asn = Number(part);
    if (asn > MAX_ASN) return null;
    if (asn !== 0 && !asns.includes(asn)) asns.push(asn);
  }
  return asns;
}

function numericRange(a: string, b: string): Row | null {
  if (!DIGITS.test(a) || !DIGITS.test(b)) return null;
  if (a.length <= 10 && b.length <= 10 && Number(b) <= MAX_V4) return ordered(4, Number(a), Number(b));
  if (a.length > 39 || b.length > 39) return null;
  const end = BigInt(b);
  return end <= MAX_V6 ? ordered(6, BigInt(a), end) : null;
}

function addressRange(family: 4 | 6, a: string, b: string): Row | null {
  if (family === 4) return ordered(4, parseV4(a), parseV4(b));
  const start = parseIpValue(a);
  const end = parseIpValue(b);
  return start?.family === 6 && end?.family === 6 ? ordered(6, start.value, end.value) : null;
}

function prefixRange(family: 4 | 6, address: string, length: number): Row | null {
  if (family === 4) {
    const value = parseV4(address);
    if (value < 0 || length > 32) return null;
    const size = 2 ** (32 - length);
    const start = value - (value % size);
    return { family: 4, start, end: start + size - 1, asns: [] };
  }
  const parsed = parseIpValue(address);
  if (parsed?.family !== 6 || length > 128) return null;
  const host = (1n << BigInt(128 - length)) - 1n;
  return { family: 6, start: parsed.value & ~host, end: (parsed.value & ~host) | host, asns: [] };
}

function ordered(family: Family, start: number | bigint, end: number | bigint): Row | null {
  if (typeof start === "number" && (start < 0 || (end as number) < 0)) return null;
  return start <= end ? { family, start, end, asns: [] } : null;
}

/** Dotted quad to a number, -1 when malformed; hand-rolled because it runs 400k times per load. */
function parseV4(text: string): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 46) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      part = 0;
      digits = 0;
      dots++;
    } else if (c >= 48 && c <= 57) {
      if (digits > 0 && part === 0) return -1; // leading zero: octal to some parsers
      part = part * 10 + (c - 48);
      if (++digits > 3 || part > 255) return -1;
    } else {
      return -1;
    }
  }
  return dots === 3 && digits > 0 ? value * 256 + part : -1;
}

/** Sorted (IPv4 first, then by network and length) and deduplicated text; sorts `cidrs` in place. */
export function canonicalCidrs(cidrs: CidrValue[]): string[] {
  cidrs.sort((x, y) => (x.family !== y.family ? x.family - y.family : x.network !== y.network ? (x.network < y.network ? -1 : 1) : x.length - y.length));
  const out: string[] = [];
  for (const cidr of cidrs) {
    const text = formatCidrValue(cidr);
    if (out[out.length - 1] !== text) out.push(text);
  }
  return out;
}
