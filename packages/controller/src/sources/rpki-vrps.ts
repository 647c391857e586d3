// Validated ROA payloads (VRPs) as an index for RFC 6811 route origin validation, read from the
// JSON documents validators write:
//   rpki-client  {"metadata":{"buildtime":"2024-05-01T10:00:00Z"},"roas":[{"asn":13335,"prefix":"1.1.1.0/24","maxLength":24,"ta":"apnic"}]}
//   Routinator   /json and /jsonext: {"metadata":{"generated":1714557600,"generatedTime":"…"},"roas":[{"asn":"AS13335",…}]}
//
// The index (vrp-table.ts) holds each family's VRPs sorted by prefix in typed arrays, with
// each VRP prefix's nearest containing one: validating a route is a binary search and a walk
// up the few VRP prefixes that cover it (bench/rpki-validate.mjs, 500,000 ROAs, on a loaded
// machine: 1.6-1.9 µs a prefix, parsing included, against 7.2 µs for a Map per length before).
// A refresh validates all its routes in one validateAll, in the index's bucket order.
import { NOT_CANONICAL, parsePrefixInto, scanIPv4Prefix, scanIPv6Prefix } from "@rlc/shared/prefix";
import { RouteColumns, VrpTable } from "./vrp-table.js";

export { INVALID, NOT_FOUND, VALID } from "./vrp-table.js";

/** RFC 6811 §2: the validation state of a route (prefix, origin ASN). */
export type RpkiState = "valid" | "invalid" | "not_found";

export class VrpDocumentError extends Error {
  override name = "VrpDocumentError";
}

export interface VrpDocument {
  index: VrpIndex;
  /** The document's own build time (rpki-client `buildtime`, Routinator `generated`). */
  generatedAt: Date;
  /** Entries skipped as malformed (a bad prefix, ASN or maxLength). */
  skipped: number;
}

const STATES: readonly RpkiState[] = ["not_found", "valid", "invalid"];

/** validateAll's code for a text that is not a CIDR (the others: NOT_FOUND, VALID, INVALID). */
export const NOT_A_CIDR = 3;

export class VrpIndex {
  private v4 = new VrpTable(4);
  private v6 = new VrpTable(6);
  /** The prefix being parsed: its network (one word for IPv4, four for IPv6). */
  private words = new Uint32Array(4);

  /** VRPs held. */
  get size(): number {
    return this.v4.count + this.v6.count;
  }

  /** Bytes of the index's typed arrays (outside the JS heap). */
  get bytes(): number {
    return this.v4.bytes + this.v6.bytes;
  }

  /** Adds a VRP; false when the prefix, ASN or maxLength is malformed. */
  add(prefix: string, asn: number, maxLength: number): boolean {
    if (!Number.isInteger(asn) || asn < 0 || asn > 4294967295) return false;
    const route = parseRoute(prefix, this.words);
    if (route < 0) return false;
    const length = route & 255;
    const six = route >= FAMILY6;
    if (!Number.isInteger(maxLength) || maxLength < length || maxLength > (six ? 128 : 32)) return false;
    (six ? this.v6 : this.v4).add(this.words, 0, length, asn, maxLength);
    return true;
  }

  /** Sorts the VRPs added into the lookup arrays (else the first validation does). */
  build(): void {
    this.v4.build();
    this.v6.build();
  }

  /**
   * RFC 6811 §2: `not_found` when no VRP covers the prefix; `valid` when a covering VRP has the
   * origin ASN and a maxLength at least the prefix's length; otherwise `invalid`. An origin of 0
   * matches no VRP (AS0 ROAs say "never valid"). Null when the prefix is not a CIDR.
   */
  validate(prefix: string, origin: number): RpkiState | null {
    const route = parseRoute(prefix, this.words);
    if (route < 0) return null;
    const state = route >= FAMILY6 ? this.v6.validate6(this.words, route & 255, origin) : this.v4.validate4(this.words[0]!, route & 255, origin);
    return STATES[state]!;
  }

  /**
   * validate() for every prefix of the groups, each with its group's origin, at once: the state
   * codes (NOT_FOUND, VALID, INVALID, NOT_A_CIDR) in the order of the groups and their prefixes.
   * Each family's routes go through VrpTable.validateMany in one pass.
   */
  validateAll(groups: readonly { prefixes: readonly string[]; origin: number }[]): Uint8Array {
    let total = 0;
    for (const g of groups) total += g.prefixes.length;
    const states = new Uint8Array(total);
    const v4 = new RouteColumns(1, total);
    const v6 = new RouteColumns(4, 1024);
    const words = this.words;
    const { words: words4, lens: lens4, origins: origins4, slots: slots4 } = v4;
    let n4 = 0;
    let slot = 0;
    for (const g of groups) {
      // An origin outside the ASN range matches no VRP, as AS0 does.
      const origin = Number.isInteger(g.origin) && g.origin >= 0 && g.origin <= 4294967295 ? g.origin : 0;
      const prefixes = g.prefixes;
      for (let i = 0; i < prefixes.length; i++, slot++) {
        // The usual IPv4 text straight into the columns (parseRoute's first step), the rest through parseRoute.
        const r = scanIPv4Prefix(prefixes[i]!, words4, n4);
        if (r >= 0 && r !== BARE_IPV4) {
          lens4[n4] = r & 255;
          origins4[n4] = origin;
          slots4[n4++] = slot;
          continue;
        }
        const route = r >= 0 ? -1 : parseRoute(prefixes[i]!, words);
        if (route < 0) states[slot] = NOT_A_CIDR;
        else if (route >= FAMILY6) v6.push(words, 0, route & 255, origin, slot);
        else {
          words4[n4] = words[0]!;
          lens4[n4] = route;
          origins4[n4] = origin;
          slots4[n4++] = slot;
        }
      }
    }
    v4.count = n4;
    this.v4.validateMany(v4, states);
    this.v6.validateMany(v6, states);
    return states;
  }
}

/** parseRoute's result for an IPv6 prefix: FAMILY6 + length (IPv4: the length alone). */
const FAMILY6 = 1024;

/**
 * Parses a CIDR (host bits cleared; a length is required) into `words`: its length, plus
 * FAMILY6 for IPv6, or -1. The shared one-pass scanners take the usual forms without an
 * allocation (the IPv4 one first: it refuses an IPv6 text at its first group, and says a bare
 * address by its result alone); the full parser decides the rest (an embedded dotted quad…).
 */
function parseRoute(text: string, words: Uint32Array): number {
  let r = scanIPv4Prefix(text, words, 0);
  if (r >= 0) return r === BARE_IPV4 ? -1 : r & 255;
  const six = text.indexOf(":") >= 0;
  if (six) r = scanIPv6Prefix(text, words, 0);
  // A canonical IPv6 text has a length; any other may be a bare address.
  if ((r < 0 || r & NOT_CANONICAL) && text.indexOf("/") < 0) return -1;
  if (r < 0) {
    const full = parsePrefixInto(text, six ? 6 : 4, words, 0);
    if (typeof full !== "number") return -1;
    r = full;
  }
  return (r & 255) + (six ? FAMILY6 : 0);
}

/** What scanIPv4Prefix answers for a bare address (a /32 without the "/32"). */
const BARE_IPV4 = 32 + NOT_CANONICAL;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** The document's build time, by the field each validator writes. */
function generatedAtOf(metadata: unknown): Date | null {
  if (!isObject(metadata)) return null;
  if (typeof metadata.generated === "number") return new Date(metadata.generated * 1000);
  for (const field of ["buildtime", "generatedTime", "generated"]) {
    const v = metadata[field];
    if (typeof v === "string") {
      const d = new Date(v);
      if (!Number.isNaN(d.getTime())) return d;
    }
  }
  return null;
}

/** Reads an rpki-client or Routinator VRP document (JSON text) into an index. */
export function parseVrpDocument(text: string): VrpDocument {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new VrpDocumentError("the VRP document is not JSON", { cause: err });
  }
  if (!isObject(doc) || !Array.isArray(doc.roas)) throw new VrpDocumentError("the VRP document has no roas array");
  const generatedAt = generatedAtOf(doc.metadata);
  if (!generatedAt) throw new VrpDocumentError("the VRP document says nowhere when it was built (metadata.buildtime or metadata.generated)");
  const index = new VrpIndex();
  let skipped = 0;
  for (const roa of doc.roas as unknown[]) {
    if (!isObject(roa) || typeof roa.prefix !== "string") {
      skipped++;
      continue;
    }
    const asn = typeof roa.asn === "number" ? roa.asn : typeof roa.asn === "string" ? Number(roa.asn.replace(/^AS/i, "")) : Number.NaN;
    const maxLength = typeof roa.maxLength === "number" ? roa.maxLength : Number(roa.maxLength);
    if (!index.add(roa.prefix, asn, maxLength)) skipped++;
  }
  index.build();
  return { index, generatedAt, skipped };
}
