// The benches' input: the @ip-location-db/asn table as CIDRs, ~90 % IPv4, one community set per
// ASN mod `sets`; `content(shift, changed)` moves set `changed` (or "all") `shift` sets on;
// `thinned(edits)` drops that many of set 0's prefixes, spread over the table.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { rangeToCidrs } from "@rlc/shared/prefix";

export function asnInput(n, sets) {
  const asnDir = dirname(createRequire(import.meta.url).resolve("@ip-location-db/asn/package.json"));
  const load = (file, limit) => {
    const rows = [];
    for (const line of readFileSync(join(asnDir, file), "utf8").split("\n")) {
      if (!line) continue;
      const [start, end, asn] = line.split(",", 3);
      for (const cidr of rangeToCidrs(start, end)) {
        rows.push([cidr, Number(asn) % sets]);
        if (rows.length >= limit) return rows;
      }
    }
    return rows;
  };
  const v4rows = load("asn-ipv4.csv", Math.round(n * 0.9));
  const v6rows = load("asn-ipv6.csv", n - v4rows.length);
  const tag = (set) => [`65000:${set + 1}`];
  const content = (shift, changed) => ({
    v4: v4rows.map(([p, set]) => [p, tag(set === changed || changed === "all" ? (set + shift) % sets : set)]),
    v6: v6rows.map(([p, set]) => [p, tag(set === changed || changed === "all" ? (set + shift) % sets : set)]),
  });
  /** The base content (`content(0, null)`) without `edits` prefixes of set 0 (one module's), spread evenly over its prefixes, which are all over the table. */
  const thinned = (edits) => {
    const base = content(0, null);
    const ofSet = v4rows.filter((r) => r[1] === 0).length + v6rows.filter((r) => r[1] === 0).length;
    const every = Math.max(1, Math.floor(ofSet / edits));
    let i = 0;
    const keep = ([, tags]) => tags[0] !== "65000:1" || i++ % every !== every - 1;
    return { v4: base.v4.filter(keep), v6: base.v6.filter(keep) };
  };
  return { v4rows, v6rows, content, thinned };
}
