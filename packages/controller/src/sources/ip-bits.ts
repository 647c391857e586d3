// Addresses and CIDRs as (version, bigint) pairs, shared by the outbound address policy and the
// CDN feed parser. Kept local on purpose: packages/shared/src/prefix is being written in
// parallel, and this should be swapped for `@rlc/shared/prefix` once its API is settled.
import { isIP } from "node:net";

export type IpVersion = 4 | 6;

export interface IpAddress {
  version: IpVersion;
  value: bigint;
}

export interface Cidr {
  version: IpVersion;
  /** Network address with host bits cleared. */
  network: bigint;
  length: number;
}

export const bitsOf = (version: IpVersion): number => (version === 4 ? 32 : 128);

/**
 * Strict parse: dotted-quad IPv4 without leading zeros (node's isIP refuses `01.2.3.4`, which some
 * stacks read as octal) or any IPv6 text form; zone ids (`fe80::1%eth0`) are refused.
 */
export function parseIp(text: string): IpAddress | null {
  const version = isIP(text);
  if (version === 4) return { version: 4, value: parseV4(text) };
  if (version === 6 && !text.includes("%")) return { version: 6, value: parseV6(text) };
  return null;
}

function parseV4(text: string): bigint {
  let value = 0n;
  for (const part of text.split(".")) value = (value << 8n) | BigInt(Number(part));
  return value;
}

function parseV6(text: string): bigint {
  let head = text;
  let tailV4: bigint | null = null;
  const lastColon = text.lastIndexOf(":");
  if (text.indexOf(".", lastColon) !== -1) {
    // Embedded dotted quad (`::ffff:1.2.3.4`) stands for the last two groups.
    tailV4 = parseV4(text.slice(lastColon + 1));
    head = text.slice(0, lastColon + 1) + "0:0";
  }
  const [left = "", right] = head.split("::");
  const leftGroups = left === "" ? [] : left.split(":");
  const rightGroups = right === undefined || right === "" ? [] : right.split(":");
  const missing = 8 - leftGroups.length - rightGroups.length;
  const groups = [...leftGroups, ...Array<string>(right === undefined ? 0 : missing).fill("0"), ...rightGroups];
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(Number.parseInt(group, 16));
  if (tailV4 !== null) value = (value & ~0xffffffffn) | tailV4;
  return value;
}

/** Canonical text: dotted quad, or RFC 5952 IPv6 (lower case, longest zero run compressed). */
export function formatIp(version: IpVersion, value: bigint): string {
  if (version === 4) {
    return [24n, 16n, 8n, 0n].map((shift) => String((value >> shift) & 0xffn)).join(".");
  }
  const groups: number[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(Number((value >> shift) & 0xffffn));
  let bestStart = -1;
  let bestLength = 0;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  // RFC 5952 4.2.2: a single zero group is not compressed.
  if (bestLength < 2) return hex.join(":");
  const left = hex.slice(0, bestStart).join(":");
  const right = hex.slice(bestStart + bestLength).join(":");
  return `${left}::${right}`;
}

export function hostMask(version: IpVersion, length: number): bigint {
  return (1n << BigInt(bitsOf(version) - length)) - 1n;
}

export type CidrParse = { ok: true; cidr: Cidr; hostBitsSet: boolean } | { ok: false; reason: "not_an_address" | "bad_prefix_length" };

/** `a.b.c.d/n`, `x::y/n`, or a bare address (a /32 or /128). Host bits are cleared and reported. */
export function parseCidr(text: string): CidrParse {
  const slash = text.indexOf("/");
  const address = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (!address) return { ok: false, reason: "not_an_address" };
  const bits = bitsOf(address.version);
  let length = bits;
  if (slash !== -1) {
    const lengthText = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(lengthText) || Number(lengthText) > bits) {
      return { ok: false, reason: "bad_prefix_length" };
    }
    length = Number(lengthText);
  }
  const mask = hostMask(address.version, length);
  const network = address.value & ~mask;
  return {
    ok: true,
    cidr: { version: address.version, network, length },
    hostBitsSet: network !== address.value,
  };
}

export function formatCidr(cidr: Cidr): string {
  return `${formatIp(cidr.version, cidr.network)}/${cidr.length}`;
}

export function cidrContains(cidr: Cidr, address: IpAddress): boolean {
  if (cidr.version !== address.version) return false;
  return (address.value & ~hostMask(cidr.version, cidr.length)) === cidr.network;
}
