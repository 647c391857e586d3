// Parsers of the two country sources (`COUNTRY_SOURCE`, country-source.ts): the RIRs' delegated
// statistics files and RIPEstat's country resource list. Pure functions over text.
//
// A delegated(-extended) file (AFRINIC, APNIC, ARIN, LACNIC, RIPE NCC all publish one) is
// `|`-separated:
//   2.3|ripencc|1700000000|123456|19830705|20261126|+0100      version line (the header)
//   ripencc|*|ipv4|*|88000|summary                            one summary line per type
//   ripencc|NL|ipv4|193.0.0.0|2048|19930901|allocated|…       records
//   # comment
// A record's value is the address count for IPv4 (not always a power of two, so the range may
// need several CIDRs) and the prefix length for IPv6. Only `allocated` and `assigned` records
// name a country's addresses; `available` and `reserved` ones (cc `ZZ` or empty) are skipped.
import { appendRangeCidrValues, type CidrValue, formatCidrValue, parseCidrValue, parseIpValue } from "@rlc/shared/prefix";

export class CountrySourceError extends Error {
  override name = "CountrySourceError";
}

/** ISO 3166-1 alpha-2 as the sources write it (upper case). */
export const COUNTRY_CODE = /^[A-Z]{2}$/;

const MAX_V4 = (1n << 32n) - 1n;

/** The fewest CIDRs covering `count` IPv4 addresses from `start`, in order; null when the range leaves IPv4. */
export function countToCidrs(start: string, count: number): string[] | null {
  const ip = parseIpValue(start);
  if (ip?.family !== 4 || !Number.isSafeInteger(count) || count < 1) return null;
  const end = ip.value + BigInt(count) - 1n;
  if (end > MAX_V4) return null;
  const out: CidrValue[] = [];
  appendRangeCidrValues(4, ip.value, end, out);
  return out.map(formatCidrValue);
}

/** Prefixes per country, IPv4 and IPv6, in the order the files listed them. */
export type CountryIndex = Map<string, string[]>;

export interface DelegatedStats {
  records: number;
  /** Lines that are neither header, summary, comment nor a record this parser understands. */
  rejected: number;
  firstRejected: string | null;
}

/** Adds the allocated and assigned address records of one delegated file to `index`. */
export function parseDelegated(text: string, index: CountryIndex): DelegatedStats {
  const stats: DelegatedStats = { records: 0, rejected: 0, firstRejected: null };
  const reject = (line: string) => {
    stats.rejected++;
    stats.firstRejected ??= line.slice(0, 120);
  };
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const f = line.split("|");
    // The version line starts with the format's version number (`2`, `2.3`).
    if (/^[0-9]+(\.[0-9]+)?$/.test(f[0]!)) continue;
    if (f.length < 7) {
      if (f[5] === "summary") continue;
      reject(line);
      continue;
    }
    const [, cc, type, start, value, , status] = f as [string, string, string, string, string, string, string];
    if (f[1] === "*" || f[5] === "summary") continue;
    if (type === "asn") continue;
    if (status !== "allocated" && status !== "assigned") continue;
    const country = cc.toUpperCase();
    if (!COUNTRY_CODE.test(country)) {
      reject(line);
      continue;
    }
    let prefixes: string[] | null = null;
    if (type === "ipv4") prefixes = /^[0-9]+$/.test(value) ? countToCidrs(start, Number(value)) : null;
    else if (type === "ipv6") prefixes = /^[0-9]{1,3}$/.test(value) ? ipv6Prefix(start, Number(value)) : null;
    if (prefixes === null) {
      reject(line);
      continue;
    }
    stats.records++;
    const list = index.get(country);
    if (list) for (const p of prefixes) list.push(p);
    else index.set(country, prefixes);
  }
  return stats;
}

function ipv6Prefix(start: string, length: number): string[] | null {
  const parsed = parseCidrValue(`${start}/${length}`);
  return parsed.ok && parsed.cidr.family === 6 ? [formatCidrValue(parsed.cidr)] : null;
}

/**
 * RIPEstat's `{status: "ok", data: {resource: "NL", resources: {asn, ipv4, ipv6}}}`: IPv4 as
 * CIDRs or as `first-last` ranges, IPv6 as CIDRs. Host bits in fetched data are masked.
 */
export function parseRipestatCountry(text: string, country: string): string[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CountrySourceError(`RIPEstat answer for ${country} is not JSON`, { cause: err });
  }
  if (!isObject(doc)) throw new CountrySourceError(`RIPEstat answer for ${country} is not an object`);
  if (doc.status !== "ok") throw new CountrySourceError(`RIPEstat answered status ${JSON.stringify(doc.status)} for ${country}`);
  const data = doc.data;
  const resources = isObject(data) ? data.resources : undefined;
  if (!isObject(data) || !isObject(resources)) throw new CountrySourceError(`RIPEstat answer for ${country} has no data.resources`);
  // A stale cache or a misrouted mirror could answer for another country.
  if (data.resource !== undefined && String(data.resource).toUpperCase() !== country) {
    throw new CountrySourceError(`RIPEstat answered for ${String(data.resource)}, not ${country}`);
  }
  const out: string[] = [];
  for (const family of ["ipv4", "ipv6"] as const) {
    const list = resources[family] ?? [];
    if (!Array.isArray(list)) throw new CountrySourceError(`RIPEstat answer for ${country}: resources.${family} is not a list`);
    for (const item of list) {
      const text = typeof item === "string" ? item.trim() : "";
      const prefixes = text.includes("-") ? rangeCidrs(text) : cidrOf(text);
      if (prefixes === null) throw new CountrySourceError(`RIPEstat answer for ${country} has a bad ${family} resource "${String(item).slice(0, 60)}"`);
      for (const p of prefixes) out.push(p);
    }
  }
  return out;
}

function cidrOf(text: string): string[] | null {
  const parsed = parseCidrValue(text);
  return parsed.ok ? [formatCidrValue(parsed.cidr)] : null;
}

function rangeCidrs(text: string): string[] | null {
  const [a, b] = text.split("-").map((s) => parseIpValue(s.trim()));
  if (!a || !b || a.family !== b.family || a.value > b.value) return null;
  const out: CidrValue[] = [];
  appendRangeCidrValues(a.family, a.value, b.value, out);
  return out.map(formatCidrValue);
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
