// The collect phase's parsers at the size of refresh-apply.mjs's tenant, in process: the 19 CDN
// text feeds (55,000 /24s and 5,500 /48s each, parseTextFeed) and the @ip-location-db/asn IPv4
// and IPv6 tables (loadAsnFileIndex, then ten large ASNs' prefixes). With BENCH_BASELINE set to
// an earlier build's packages/controller/dist, that build's parsers run interleaved with this
// one's on the same inputs (which goes first alternating) and must give the same results.
// Medians of the rounds; asserts no time.
//
//   npx turbo run build && node bench/source-parse.mjs        # BENCH_ROUNDS (5)
//   BENCH_BASELINE=/path/to/earlier/packages/controller/dist node bench/source-parse.mjs

import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { isDeepStrictEqual } from "node:util";
import { publicSlash24s, xorshift } from "./random.mjs";

const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const load = async (dist) => ({
  cdn: await import(`${dist}sources/cdn-parse.js`),
  asn: await import(`${dist}sources/asn-file-index.js`),
});
const builds = [{ name: "this build", lib: await load(new URL("../packages/controller/dist/", import.meta.url).href) }];
if (process.env.BENCH_BASELINE) builds.push({ name: "baseline", lib: await load(pathToFileURL(`${process.env.BENCH_BASELINE}/`).href) });

// refresh-apply.mjs's feeds.
const K = 19;
const P = 55_000;
const all = publicSlash24s(K * P, xorshift(7));
const texts = Array.from({ length: K }, (_, k) => {
  const v6 = Array.from({ length: P / 10 }, (_, i) => `2a0${k % 10}:${k.toString(16)}:${i.toString(16)}::/48`);
  return `${[...all.slice(k * P, (k + 1) * P), ...v6].join("\n")}\n`;
});
const asnDir = dirname(createRequire(import.meta.url).resolve("@ip-location-db/asn/package.json"));
const files = [join(asnDir, "asn-ipv4.csv"), join(asnDir, "asn-ipv6.csv")];
const ASNS = [13335, 15169, 16509, 8075, 32934, 3356, 174, 6939, 7018, 701];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const times = new Map(builds.map((b) => [b.name, { feeds: [], asnLoad: [], asnPrefixes: [] }]));
const outputs = new Map();
for (let r = 0; r < ROUNDS; r++) {
  for (const b of r % 2 ? [...builds].reverse() : builds) {
    const t = times.get(b.name);
    let start = performance.now();
    const feeds = texts.map((text) => b.lib.cdn.parseTextFeed(text));
    t.feeds.push(performance.now() - start);
    start = performance.now();
    const index = await b.lib.asn.loadAsnFileIndex(files);
    t.asnLoad.push(performance.now() - start);
    start = performance.now();
    const prefixes = ASNS.map((a) => index.prefixesOf(a));
    t.asnPrefixes.push(performance.now() - start);
    if (r === 0) outputs.set(b.name, { feeds, stats: index.stats, prefixes });
  }
}
const lines = texts.reduce((n, text) => n + text.split("\n").length - 1, 0);
console.log(
  `${K} feeds, ${lines.toLocaleString()} lines; the ASN tables (${outputs.get("this build").stats.rows.toLocaleString()} rows); medians of ${ROUNDS} rounds`,
);
for (const b of builds) {
  const t = times.get(b.name);
  console.log(
    `  ${b.name.padEnd(10)} feeds ${median(t.feeds).toFixed(0)} ms, ASN index load ${median(t.asnLoad).toFixed(0)} ms, ${ASNS.length} ASNs' prefixes ${median(t.asnPrefixes).toFixed(1)} ms`,
  );
}
if (builds.length === 2) {
  const [now, base] = builds.map((b) => times.get(b.name));
  const ratio = (k) => (median(base[k]) / median(now[k])).toFixed(2);
  console.log(`  baseline / this build: feeds ${ratio("feeds")}×, ASN index load ${ratio("asnLoad")}×, prefixes ${ratio("asnPrefixes")}×`);
  console.log(`  same results: ${isDeepStrictEqual(outputs.get("this build"), outputs.get("baseline")) ? "yes" : "NO"}`);
}
