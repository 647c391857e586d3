/**
 * The default `BIRD.exclude_prefixes`: ranges that are never routed on the public Internet, so a
 * route list must not steer them. The required ones are RFC 1918, RFC 6598, loopback, link-local,
 * ULA, multicast and documentation; the rest are the entries that common bogon filters (Team
 * Cymru's bogons, NLNOG's BGP filter guide) also drop as never routable. Deliberately not listed:
 * 6to4 (2002::/16, 192.88.99.0/24) and NAT64 (64:ff9b::/96), which do carry traffic to real
 * hosts.
 */
export const DEFAULT_EXCLUDE_PREFIXES: readonly string[] = Object.freeze([
  "0.0.0.0/8", // "this network" (RFC 791, RFC 1122)
  "10.0.0.0/8", // private (RFC 1918)
  "100.64.0.0/10", // shared address space, carrier-grade NAT (RFC 6598)
  "127.0.0.0/8", // loopback (RFC 1122)
  "169.254.0.0/16", // link-local (RFC 3927)
  "172.16.0.0/12", // private (RFC 1918)
  "192.0.0.0/24", // IETF protocol assignments (RFC 6890)
  "192.0.2.0/24", // documentation TEST-NET-1 (RFC 5737)
  "192.168.0.0/16", // private (RFC 1918)
  "198.18.0.0/15", // benchmarking (RFC 2544)
  "198.51.100.0/24", // documentation TEST-NET-2 (RFC 5737)
  "203.0.113.0/24", // documentation TEST-NET-3 (RFC 5737)
  "224.0.0.0/4", // multicast (RFC 5771)
  "240.0.0.0/4", // reserved, and the limited broadcast 255.255.255.255 (RFC 1112, RFC 919)
  "::/8", // reserved by the IETF: unspecified, loopback, IPv4-mapped and -compatible (RFC 4291)
  "100::/64", // discard-only (RFC 6666)
  "2001:2::/48", // benchmarking (RFC 5180)
  "2001:db8::/32", // documentation (RFC 3849)
  "3fff::/20", // documentation (RFC 9637)
  "fc00::/7", // unique local addresses (RFC 4193)
  "fe80::/10", // link-local (RFC 4291)
  "fec0::/10", // deprecated site-local (RFC 3879)
  "ff00::/8", // multicast (RFC 4291)
]);

/** Default minimum prefix lengths (`BIRD.min_prefix_length_v4` / `_v6`). */
export const DEFAULT_MIN_PREFIX_LENGTH_V4 = 8;
export const DEFAULT_MIN_PREFIX_LENGTH_V6 = 16;
