// The generated inputs of the RPKI benches (rpki-validate.mjs, rpki-refresh.mjs): a VRP
// document of `roas` ROAs in rpki-client's JSON and `prefixes` announcements grouped by origin
// ASN, the same on every run.
import { xorshift } from "./random.mjs";

/**
 * ROAs roughly as the global set has them: ~80% IPv4, over half of them /24s, few shorter than
 * /16; ~20% IPv6, mostly /32-/48; a third with maxLength above the length; 65,000 origin ASNs.
 * Announcements: half a ROA's own prefix (mostly by its ASN: valid; else invalid by origin), a
 * quarter a more specific of one (valid or invalid by length), a quarter anywhere (mostly not
 * found). Answers the document's text and the announcements as snapshot groups by origin ASN.
 */
export function rpkiBenchData(ROAS, PREFIXES) {
  const rnd = xorshift(26);
  const int = (n) => Math.floor(rnd() * n);

  // ROAs roughly as the global set has them: ~80% IPv4, over half of them /24s, few shorter than
  // /16; ~20% IPv6, mostly /32-/48; a third with maxLength above the length; 65,000 origin ASNs.
  function v4(len) {
    const addr = (((12 + int(200)) << 24) | (int(256) << 16) | (int(256) << 8)) >>> 0;
    const net = len === 0 ? 0 : (addr & (0xffffffff << (32 - len))) >>> 0;
    return `${net >>> 24}.${(net >>> 16) & 255}.${(net >>> 8) & 255}.${net & 255}/${len}`;
  }
  function v6(len) {
    const g = [0x2001 + int(0x0dff), int(65536), int(65536)];
    const words = (BigInt(g[0]) << 32n) | (BigInt(g[1]) << 16n) | BigInt(g[2]);
    const net = (words >> BigInt(48 - Math.min(len, 48))) << BigInt(48 - Math.min(len, 48));
    const hex = [(net >> 32n) & 0xffffn, (net >> 16n) & 0xffffn, net & 0xffffn].map((x) => x.toString(16));
    return `${hex.join(":")}::/${len}`;
  }
  const v4Length = () => {
    const x = rnd();
    return x < 0.55 ? 24 : x < 0.7 ? 22 + int(2) : x < 0.9 ? 16 + int(6) : 10 + int(6);
  };
  const roas = [];
  for (let i = 0; i < ROAS; i++) {
    const six = rnd() < 0.2;
    const len = six ? (rnd() < 0.5 ? 48 : 29 + int(20)) : v4Length();
    const max = six ? 128 : 32;
    roas.push({ asn: 1 + int(65_000), prefix: six ? v6(len) : v4(len), maxLength: Math.min(max, rnd() < 0.33 ? len + int(8) : len), ta: "bench" });
  }
  const text = JSON.stringify({ metadata: { buildtime: new Date().toISOString(), roas: ROAS }, roas });

  // Announcements: half a ROA's own prefix (mostly by its ASN: valid; else invalid by origin),
  // a quarter a more specific of one (valid or invalid by length), a quarter anywhere (mostly
  // not found); grouped by origin ASN as the snapshot holds them.
  const groups = new Map();
  const announce = (p, asn) => {
    let g = groups.get(asn);
    if (!g) groups.set(asn, (g = { source: "asn", origin: String(asn), prefixes: [], seen_at: null }));
    g.prefixes.push(p);
  };
  for (let i = 0; i < PREFIXES; i++) {
    const x = rnd();
    const roa = roas[int(roas.length)];
    if (x < 0.5) announce(roa.prefix, rnd() < 0.85 ? roa.asn : 1 + int(65_000));
    else if (x < 0.75) {
      const [net, len] = roa.prefix.split("/");
      const longer = Math.min(roa.prefix.includes(":") ? 64 : 24, Number(len) + int(4));
      announce(`${net}/${longer}`, roa.asn);
    } else announce(rnd() < 0.2 ? v6(32 + int(17)) : v4(24), 1 + int(65_000));
  }
  return { text, groups: [...groups.values()] };
}
