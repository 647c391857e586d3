import { isIPv4, isIPv6 } from "node:net";

/**
 * Every value from a bundle passes through one of these before it reaches the config text, so
 * nothing in a name, password or address can end a statement and start another. BIRD 2's lexer
 * has no escapes in strings ("..." ends at the next quote, a newline is an error), so a value
 * that cannot be quoted is refused or, for free text in comments and descriptions, replaced.
 */
export class RenderError extends Error {
  override name = "RenderError";
  readonly code = "render_failed";
  /** Where in the payload the bad value was, e.g. `peers[0].password`. */
  readonly path: string;

  constructor(path: string, message: string) {
    super(`${path}: ${message}`);
    this.path = path;
  }
}

export function ipv4(value: unknown, path: string): string {
  if (typeof value !== "string" || !isIPv4(value)) throw new RenderError(path, `${show(value)} is not an IPv4 address`);
  return value;
}

export function ipv6(value: unknown, path: string): string {
  if (typeof value !== "string" || !isIPv6(value) || value.includes("%")) {
    throw new RenderError(path, `${show(value)} is not an IPv6 address`);
  }
  return value.toLowerCase();
}

export function ipAny(value: unknown, path: string): { address: string; family: 4 | 6 } {
  if (typeof value === "string" && isIPv4(value)) return { address: value, family: 4 };
  return { address: ipv6(value, path), family: 6 };
}

export function integer(value: unknown, min: number, max: number, path: string): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    throw new RenderError(path, `${show(value)} is not an integer in ${min}..${max}`);
  }
  return value;
}

export const asn = (value: unknown, path: string): number => integer(value, 1, 4294967295, path);
export const port = (value: unknown, path: string): number => integer(value, 1, 65535, path);

const V4_OK = 1;
const V4_HOST_BITS = 2;
const V4_OTHER = 0;

/**
 * `a.b.c.d/len` in its plain spelling (decimal octets without leading zeros, length 0-32):
 * V4_OK when its host bits are clear, V4_HOST_BITS when not; V4_OTHER for anything else,
 * which the full check then names. `code(i)` is the character at `i` of `[from, to)`: a string's
 * or a section's bytes (the agent checks prefixes where they lie, without a string each).
 */
function scanV4(code: (i: number) => number, from: number, to: number): number {
  let bits = 0;
  let i = from;
  for (let octet = 0; octet < 5; octet++) {
    const start = i;
    let v = 0;
    while (i < to) {
      const c = code(i);
      if (c < 48 || c > 57) break;
      v = v * 10 + (c - 48);
      i++;
    }
    const digits = i - start;
    if (digits === 0 || digits > 3 || (digits > 1 && code(start) === 48)) return V4_OTHER;
    if (octet < 4) {
      if (v > 255 || i >= to || code(i) !== (octet < 3 ? 46 : 47)) return V4_OTHER;
      bits = ((bits << 8) | v) >>> 0;
      i++;
    } else {
      if (v > 32 || i !== to) return V4_OTHER;
      if (v < 32 && bits % 2 ** (32 - v) !== 0) return V4_HOST_BITS;
      return V4_OK;
    }
  }
  return V4_OTHER;
}

/** `bytes[from, to)` is an IPv4 prefix that {@link prefix} gives back as it is: plain spelling, host bits clear. */
export function isPlainV4Prefix(bytes: Uint8Array, from: number, to: number): boolean {
  return scanV4((i) => bytes[i] as number, from, to) === V4_OK;
}

/** `a.b.c.d/len` or `x::/len`, host bits clear (BIRD refuses them: "Invalid IPv4 prefix"). */
export function prefix(value: unknown, family: 4 | 6, path: string): string {
  if (family === 4 && typeof value === "string") {
    // The common case, one pass over the characters without a regular expression or an array:
    // a render checks every prefix of the revision (500k), and this was most of its time.
    const v4 = scanV4((i) => value.charCodeAt(i), 0, value.length);
    if (v4 === V4_OK) return value;
    if (v4 === V4_HOST_BITS) throw new RenderError(path, `${show(value)} has host bits set`);
  }
  const [address, len, extra] = typeof value === "string" ? value.split("/") : [];
  const max = family === 4 ? 32 : 128;
  const ok =
    extra === undefined &&
    address !== undefined &&
    len !== undefined &&
    /^\d{1,3}$/.test(len) &&
    Number(len) <= max &&
    (family === 4 ? isIPv4(address) : isIPv6(address) && !address.includes("%"));
  if (!ok) throw new RenderError(path, `${show(value)} is not an IPv${family} prefix`);
  if ((family === 4 ? v4Bits(address) : v6Bits(address)) & ((1n << BigInt(max - Number(len))) - 1n)) {
    throw new RenderError(path, `${show(value)} has host bits set`);
  }
  return `${family === 4 ? address : address.toLowerCase()}/${Number(len)}`;
}

function v4Bits(address: string): bigint {
  return address.split(".").reduce((acc, octet) => (acc << 8n) | BigInt(Number(octet)), 0n);
}

function v6Bits(address: string): bigint {
  let text = address;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted?.[1]) {
    const v4 = v4Bits(dotted[1]);
    text = `${text.slice(0, dotted.index)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head = "", tail] = text.split("::");
  const left = head ? head.split(":") : [];
  const right = tail ? tail.split(":") : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill("0"), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}

export type Community = { kind: "standard"; parts: [number, number] } | { kind: "large"; parts: [number, number, number] };

/** `ASN:VALUE` (each 0..65535) or `ASN:V1:V2` (each 0..4294967295). */
export function community(value: unknown, path: string): Community {
  const parts = typeof value === "string" ? value.split(":") : [];
  if (!parts.every((p) => /^\d{1,10}$/.test(p))) throw new RenderError(path, `${show(value)} is not a community`);
  const n = parts.map(Number);
  if (n.length === 2 && n.every((x) => x <= 65535)) return { kind: "standard", parts: [n[0] ?? 0, n[1] ?? 0] };
  if (n.length === 3 && n.every((x) => x <= 4294967295)) return { kind: "large", parts: [n[0] ?? 0, n[1] ?? 0, n[2] ?? 0] };
  throw new RenderError(path, `${show(value)} is not a community`);
}

export const communityText = (c: Community): string => c.parts.join(":");
/** BIRD's literal: `(a,b)` or `(a,b,c)`. */
export const communityLiteral = (c: Community): string => `(${c.parts.join(",")})`;

export function compareCommunities(a: Community, b: Community): number {
  if (a.kind !== b.kind) return a.kind === "standard" ? -1 : 1;
  for (let i = 0; i < a.parts.length; i++) {
    const d = (a.parts[i] ?? 0) - (b.parts[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * A BIRD string literal. Refuses what BIRD cannot read back as the same bytes: a quote, a
 * newline (the lexer's only terminators) and any other control character.
 */
export function quoted(value: unknown, path: string, maxBytes = 1024): string {
  if (typeof value !== "string" || value.length === 0) throw new RenderError(path, "must be a non-empty string");
  if (/["\p{Cc}]/u.test(value)) throw new RenderError(path, "must not contain a double quote or a control character");
  if (Buffer.byteLength(value) > maxBytes) throw new RenderError(path, `must be at most ${maxBytes} bytes`);
  return `"${value}"`;
}

/** Free text for a comment or a description: what cannot be quoted is replaced, never refused. */
export function label(value: unknown, maxLength = 120): string {
  const text = typeof value === "string" ? value : String(value ?? "");
  return text
    .replaceAll('"', "'")
    .replace(/[\p{Cc}\u2028\u2029]/gu, "?")
    .slice(0, maxLength);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PEER_PROTOCOL = /^rl_peer_([0-9a-f]{32})$/;

/**
 * BGP protocols are named `rl_peer_<peer uuid, lower-case hex without dashes>`: a BIRD symbol
 * (letters, digits, underscore; 40 of BIRD's 64 characters) that {@link peerIdFromProtocol}
 * turns back into the peer id, so `show protocols` needs no lookup table.
 */
export function peerProtocolName(peerId: unknown, path: string): string {
  if (typeof peerId !== "string" || !UUID.test(peerId)) throw new RenderError(path, `${show(peerId)} is not a UUID`);
  return `rl_peer_${peerId.toLowerCase().replaceAll("-", "")}`;
}

/** The peer id of a protocol named by {@link peerProtocolName}; null for any other protocol. */
export function peerIdFromProtocol(name: string): string | null {
  const hex = PEER_PROTOCOL.exec(name)?.[1];
  if (!hex) return null;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function show(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(label(value, 60)) : String(value);
}
