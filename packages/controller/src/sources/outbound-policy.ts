// The address policy of every server-side fetch: which addresses a fetch may connect to, and
// which URLs are refused by their form alone (checked when a URL is saved).
import { type CidrValue, cidrValueContains, formatIpValue, type IpValue, parseCidrValue, parseIpValue } from "@rlc/shared/prefix";
import { OutboundRefusedError, type RefusalReason } from "./outbound-errors.js";

export interface AddressRefusal {
  reason: RefusalReason;
  /** The address as it was checked. */
  address: string;
  /** The IPv4 address embedded in an IPv6 form, when that is what was refused. */
  via?: string;
}

export interface AddressPolicy {
  /** Why `address` (an IP literal, brackets allowed) may not be connected to, or null when it may. */
  refusal(address: string): AddressRefusal | null;
}

type Range = readonly [CidrValue, RefusalReason];
type Embedded = readonly [CidrValue, (value: bigint) => bigint];

const range = (text: string, reason: RefusalReason): Range => {
  const parsed = parseCidrValue(text);
  if (!parsed.ok) throw new Error(`bad built-in range ${text}`);
  return [parsed.cidr, reason];
};
const cidr = (text: string): CidrValue => range(text, "reserved")[0];

// First match wins, so the single addresses come before the blocks that contain them.
const V4_RANGES: readonly Range[] = [
  range("169.254.169.254/32", "metadata"), // AWS, GCP, Azure, OCI instance metadata
  range("100.100.100.200/32", "metadata"), // Alibaba Cloud instance metadata
  range("168.63.129.16/32", "metadata"), // Azure WireServer: public space, reachable only inside Azure
  range("255.255.255.255/32", "broadcast"),
  range("0.0.0.0/8", "unspecified"),
  range("10.0.0.0/8", "private"),
  range("100.64.0.0/10", "cgnat"),
  range("127.0.0.0/8", "loopback"),
  range("169.254.0.0/16", "link_local"),
  range("172.16.0.0/12", "private"),
  range("192.0.0.0/24", "reserved"), // IETF protocol assignments
  range("192.0.2.0/24", "documentation"),
  range("192.88.99.0/24", "reserved"), // deprecated 6to4 relay anycast
  range("192.168.0.0/16", "private"),
  range("198.18.0.0/15", "benchmarking"),
  range("198.51.100.0/24", "documentation"),
  range("203.0.113.0/24", "documentation"),
  range("224.0.0.0/4", "multicast"),
  range("240.0.0.0/4", "reserved"),
];

const V6_RANGES: readonly Range[] = [
  range("::/128", "unspecified"),
  range("::1/128", "loopback"),
  range("fd00:ec2::254/128", "metadata"), // AWS instance metadata over IPv6
  range("64:ff9b:1::/48", "reserved"), // local-use NAT64 (RFC 8215): any embedding, refuse whole
  range("100::/64", "reserved"), // discard-only
  range("2001::/32", "reserved"), // Teredo: the client address is obfuscated inside
  range("2001:2::/48", "benchmarking"),
  range("2001:db8::/32", "documentation"),
  range("3fff::/20", "documentation"),
  range("fc00::/7", "unique_local"),
  range("fe80::/10", "link_local"),
  range("fec0::/10", "reserved"), // deprecated site-local
  range("ff00::/8", "multicast"),
];

const low32 = (value: bigint): bigint => value & 0xffffffffn;

// IPv6 forms that reach an IPv4 address: judged by the IPv4 address they carry.
const V6_EMBEDDING: readonly Embedded[] = [
  [cidr("::ffff:0:0/96"), low32], // IPv4-mapped
  [cidr("64:ff9b::/96"), low32], // NAT64 well-known prefix
  [cidr("::/96"), low32], // IPv4-compatible (deprecated); :: and ::1 are caught before
  [cidr("2002::/16"), (value) => (value >> 80n) & 0xffffffffn], // 6to4
];

// Everything outside 2000::/3 that is not listed above is unassigned by IANA.
const V6_GLOBAL_UNICAST = cidr("2000::/3");

/** Compile an allow-list (`APP_OUTBOUND_ALLOW_CIDRS`, already split). Throws on a bad entry. */
export function createAddressPolicy(allowCidrs: readonly string[] = []): AddressPolicy {
  const allowed: CidrValue[] = allowCidrs.map((text) => {
    const parsed = parseCidrValue(text.trim());
    if (!parsed.ok) throw new TypeError(`outbound allow-list: "${text}" is not an address or CIDR`);
    return parsed.cidr;
  });
  const isAllowed = (address: IpValue) => allowed.some((c) => cidrValueContains(c, address));

  const judge = (address: IpValue, text: string): AddressRefusal | null => {
    if (isAllowed(address)) return null;
    const table = address.family === 4 ? V4_RANGES : V6_RANGES;
    for (const [block, reason] of table) {
      if (cidrValueContains(block, address)) return { reason, address: text };
    }
    if (address.family === 4) return null;
    for (const [block, extract] of V6_EMBEDDING) {
      if (!cidrValueContains(block, address)) continue;
      const v4: IpValue = { family: 4, value: extract(address.value) };
      const v4Text = formatIpValue(v4);
      const inner = judge(v4, v4Text);
      return inner && { reason: inner.reason, address: text, via: v4Text };
    }
    if (!cidrValueContains(V6_GLOBAL_UNICAST, address)) return { reason: "reserved", address: text };
    return null;
  };

  return {
    refusal(text) {
      const bare = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
      // Resolvers may hand back a zone id on link-local answers; the address alone decides.
      const address = parseIpValue(bare.split("%")[0] ?? bare);
      if (!address) return { reason: "invalid_address", address: text };
      return judge(address, bare);
    },
  };
}

export function refusedError(refusal: AddressRefusal, url?: string): OutboundRefusedError {
  const form = refusal.via ? ` (an IPv6 form of ${refusal.via})` : "";
  return new OutboundRefusedError(refusal.reason, `address ${refusal.address}${form} is refused by the outbound policy: ${refusal.reason.replace("_", " ")}`, {
    ...refusal,
    url,
  });
}

/**
 * Save-time check of a URL's form: http(s) only, no credentials, and no literal address that the
 * policy refuses. Host names are not resolved here; they are checked when connecting.
 * Every IPv4 spelling (`127.1`, `0x7f000001`, `2130706433`, `017700000001`) is normalised to a
 * dotted quad by WHATWG URL parsing before the check, so only canonical forms reach the policy.
 */
export function checkUrlForm(input: string | URL, policy: AddressPolicy): URL {
  let url: URL;
  try {
    url = new URL(String(input));
  } catch {
    throw new OutboundRefusedError("invalid_url", "not a valid absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new OutboundRefusedError("scheme", `scheme ${url.protocol} is refused: only http and https`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new OutboundRefusedError("credentials", "credentials in the URL are refused");
  }
  const host = url.hostname;
  if (host.startsWith("[") || parseIpValue(host)) {
    const refusal = policy.refusal(host);
    if (refusal) throw refusedError(refusal, url.href);
  }
  return url;
}
