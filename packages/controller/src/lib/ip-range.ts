// Canonical CIDR text for IP-range entries. Parsing comes from the outbound policy's ip-bits
// helpers; packages/shared/src/prefix replaces them once its suite is green.
import { type Cidr, formatCidr, parseCidr } from "../sources/ip-bits.js";
import { accept, refuse, type ValueResult } from "./value-result.js";

export interface CanonicalCidr {
  /** `10.0.0.0/8`, `2001:db8::/32`, `::ffff:1.2.3.4/128`. */
  text: string;
  family: 4 | 6;
}

const LENGTH = /^(?:0|[1-9][0-9]{0,2})$/;
const MAPPED_PREFIX = 0xffffn << 32n;

/**
 * RFC 5952 text, and for IPv4-mapped addresses (`::ffff:0:0/96`) the mixed notation of its
 * section 5, as `@rlc/shared/prefix` and PostgreSQL write them.
 */
export function formatCanonicalCidr(cidr: Cidr): string {
  if (cidr.version === 6 && cidr.network >> 32n === MAPPED_PREFIX >> 32n) {
    const v4 = cidr.network & 0xffffffffn;
    const quad = [24n, 16n, 8n, 0n].map((s) => String((v4 >> s) & 0xffn)).join(".");
    return `::ffff:${quad}/${cidr.length}`;
  }
  return formatCidr(cidr);
}

/**
 * An IPv4 or IPv6 CIDR, or a bare address (a /32 or /128). Host bits set are refused with the
 * network named (`10.0.0.1/8` → "did you mean 10.0.0.0/8"); a prefix length with a leading zero
 * is refused rather than guessed at.
 */
export function normaliseCidr(input: string): ValueResult<CanonicalCidr> {
  const text = input.trim();
  const slash = text.indexOf("/");
  if (slash !== -1 && !LENGTH.test(text.slice(slash + 1))) return refuse(`"${text.slice(0, 60)}" has an invalid prefix length`);
  const parsed = parseCidr(text);
  if (!parsed.ok) {
    return refuse(
      parsed.reason === "bad_prefix_length"
        ? `"${text.slice(0, 60)}" has a prefix length out of range (0..32 for IPv4, 0..128 for IPv6)`
        : `"${text.slice(0, 60)}" is not an IPv4 or IPv6 address or CIDR`,
    );
  }
  const canonical = formatCanonicalCidr(parsed.cidr);
  if (parsed.hostBitsSet) return refuse(`host bits set in ${text}: did you mean ${canonical}`);
  return accept({ text: canonical, family: parsed.cidr.version });
}
