// Validated ROA payloads (VRPs) as an index for RFC 6811 route origin validation, read from the
// JSON documents validators write:
//   rpki-client  {"metadata":{"buildtime":"2024-05-01T10:00:00Z"},"roas":[{"asn":13335,"prefix":"1.1.1.0/24","maxLength":24,"ta":"apnic"}]}
//   Routinator   /json and /jsonext: {"metadata":{"generated":1714557600,"generatedTime":"…"},"roas":[{"asn":"AS13335",…}]}
//
// The index keys each VRP by its prefix (network and length) and chains the VRPs of one prefix
// in typed arrays; a lookup tries only the prefix lengths some VRP has (IPv4 ROAs use about 17
// lengths, IPv6 about 30), so validating a prefix is a handful of Map reads, whatever the count.
// IPv4 keys are the network's top bits in one Map per length: small integers, which V8 hashes
// without boxing (one Map keyed by network * 64 + length took ~2x as long per lookup).
import { parseCidr } from "@rlc/shared/prefix";

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

export class VrpIndex {
  /** Per length, the network's top `length` bits (a small integer V8 hashes fast) → first VRP. */
  private heads4: Map<number, number>[] = Array.from({ length: 33 }, () => new Map<number, number>());
  /**
   * IPv4 lengths 16..32: which /16s hold a VRP of that length, read before the Map (most
   * lengths have none under a given /16, and a Map read of a large table costs a cache miss).
   */
  private occupied4: (Uint8Array | undefined)[] = [];
  /** IPv6 up to /53: per length, the network's top bits as a number (exact below 2^53). */
  private heads6n: Map<number, number>[] = Array.from({ length: 54 }, () => new Map<number, number>());
  /** IPv6 longer than /53: a text key. */
  private heads6 = new Map<string, number>();
  private lens4 = new Set<number>();
  private lens6 = new Set<number>();
  private sorted4: number[] = [];
  private sorted6: number[] = [];
  private asns = new Uint32Array(1024);
  private maxLens = new Uint8Array(1024);
  private next = new Int32Array(1024);
  private words6 = new Uint32Array(4);
  /** VRPs held. */
  size = 0;

  /** Adds a VRP; false when the prefix or maxLength is malformed. */
  add(prefix: string, asn: number, maxLength: number): boolean {
    if (!Number.isInteger(asn) || asn < 0 || asn > 4294967295) return false;
    const parsed = parseRoute(prefix, this.words6);
    if (parsed === null) return false;
    const max = parsed.family === 4 ? 32 : 128;
    if (!Number.isInteger(maxLength) || maxLength < parsed.length || maxLength > max) return false;
    if (this.size === this.asns.length) this.grow();
    const i = this.size++;
    this.asns[i] = asn;
    this.maxLens[i] = maxLength;
    if (parsed.family === 4) {
      const heads = this.heads4[parsed.length]!;
      const key = top4(parsed.v4, parsed.length);
      if (parsed.length >= 16) (this.occupied4[parsed.length] ??= new Uint8Array(65536))[parsed.v4 >>> 16] = 1;
      this.next[i] = heads.get(key) ?? -1;
      heads.set(key, i);
      if (!this.lens4.has(parsed.length)) {
        this.lens4.add(parsed.length);
        this.sorted4 = [...this.lens4].sort((a, b) => a - b);
      }
    } else {
      if (parsed.length <= 53) {
        const heads = this.heads6n[parsed.length]!;
        const key = top6(this.words6, parsed.length);
        this.next[i] = heads.get(key) ?? -1;
        heads.set(key, i);
      } else {
        const key = key6(this.words6, parsed.length);
        this.next[i] = this.heads6.get(key) ?? -1;
        this.heads6.set(key, i);
      }
      if (!this.lens6.has(parsed.length)) {
        this.lens6.add(parsed.length);
        this.sorted6 = [...this.lens6].sort((a, b) => a - b);
      }
    }
    return true;
  }

  /**
   * RFC 6811 §2: `not_found` when no VRP covers the prefix; `valid` when a covering VRP has the
   * origin ASN and a maxLength at least the prefix's length; otherwise `invalid`. An origin of 0
   * matches no VRP (AS0 ROAs say "never valid"). Null when the prefix is not a CIDR.
   */
  validate(prefix: string, origin: number): RpkiState | null {
    const parsed = parseRoute(prefix, this.words6);
    if (parsed === null) return null;
    let covered = false;
    if (parsed.family === 4) {
      for (const l of this.sorted4) {
        if (l > parsed.length) break;
        if (l >= 16 && this.occupied4[l]![parsed.v4 >>> 16] === 0) continue;
        let h = this.heads4[l]!.get(top4(parsed.v4, l));
        while (h !== undefined && h !== -1) {
          covered = true;
          if (origin !== 0 && this.asns[h] === origin && parsed.length <= this.maxLens[h]!) return "valid";
          h = this.next[h];
        }
      }
    } else {
      for (const l of this.sorted6) {
        if (l > parsed.length) break;
        let h = l <= 53 ? this.heads6n[l]!.get(top6(this.words6, l)) : this.heads6.get(key6(this.words6, l));
        while (h !== undefined && h !== -1) {
          covered = true;
          if (origin !== 0 && this.asns[h] === origin && parsed.length <= this.maxLens[h]!) return "valid";
          h = this.next[h];
        }
      }
    }
    return covered ? "invalid" : "not_found";
  }

  private grow(): void {
    const n = this.asns.length * 2;
    const asns = new Uint32Array(n);
    asns.set(this.asns);
    const maxLens = new Uint8Array(n);
    maxLens.set(this.maxLens);
    const next = new Int32Array(n);
    next.set(this.next);
    this.asns = asns;
    this.maxLens = maxLens;
    this.next = next;
  }
}

const mask4 = (addr: number, len: number) => (len === 0 ? 0 : (addr & (0xffffffff << (32 - len))) >>> 0);
const top4 = (addr: number, len: number) => (len === 0 ? 0 : addr >>> (32 - len));

/** The top `len` (≤ 53) bits of an IPv6 network as an exact number. */
function top6(words: Uint32Array, len: number): number {
  if (len <= 32) return len === 0 ? 0 : words[0]! >>> (32 - len);
  return words[0]! * 2 ** (len - 32) + (words[1]! >>> (64 - len));
}

function key6(words: Uint32Array, len: number): string {
  let key = `${len}`;
  for (let w = 0; w < 4; w++) {
    const bits = len - 32 * w;
    if (bits <= 0) break;
    key += `:${bits >= 32 ? words[w]! : mask4(words[w]!, bits)}`;
  }
  return key;
}

type Route = { family: 4; v4: number; length: number } | { family: 6; v4: 0; length: number };

/** A prefix's network (IPv4 as a number, IPv6 into `words6`) and length; host bits cleared. */
function parseRoute(text: string, words6: Uint32Array): Route | null {
  if (text.indexOf(":") === -1) {
    // IPv4 by hand: this runs once per announced prefix (a million on a large tenant).
    let addr = 0;
    let octet = -1;
    let dots = 0;
    let i = 0;
    for (; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c >= 48 && c <= 57) {
        octet = octet === -1 ? c - 48 : octet * 10 + (c - 48);
        if (octet > 255) return null;
      } else if (c === 46 && octet !== -1 && dots < 3) {
        addr = addr * 256 + octet;
        octet = -1;
        dots++;
      } else break;
    }
    if (dots !== 3 || octet === -1 || text.charCodeAt(i) !== 47) return null;
    addr = addr * 256 + octet;
    let length = 0;
    if (i + 1 >= text.length || text.length - i - 1 > 2) return null;
    for (let j = i + 1; j < text.length; j++) {
      const c = text.charCodeAt(j);
      if (c < 48 || c > 57) return null;
      length = length * 10 + (c - 48);
    }
    if (length > 32) return null;
    return { family: 4, v4: mask4(addr >>> 0, length), length };
  }
  try {
    const parsed = parseCidr(text, { mode: "mask" });
    if (parsed.family !== 6 || text.indexOf("/") === -1) return null;
    for (let w = 0; w < 4; w++) words6[w] = parsed.words[w]!;
    return { family: 6, v4: 0, length: parsed.length };
  } catch {
    return null;
  }
}

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
  return { index, generatedAt, skipped };
}
