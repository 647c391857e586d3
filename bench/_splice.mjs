// One CDN module's feed changes by 1% in a tenant with ~1.2M collected prefixes over ~20 modules
// (an AS_PREFIXES module from the file ASN source, @ip-location-db/asn, and 19 CDN text feeds
// served locally): POST refresh of that module → revision, incremental (the tenant's last build
// reused) beside a full rebuild of the same change in the same run; the full refresh of the whole
// tenant with the controller's peak RSS; the diff of the two revisions; lookup p99 against a bare
// Fastify route. The controller runs in a process of its own (controller-process.mjs). Prints
// figures beside the targets of issue 30; asserts no time. The machine is shared: one run is
// noisy, compare ratios within it.
//
//   npx turbo run build && node bench/refresh-apply.mjs
//   BENCH_CDN_MODULES=19 BENCH_CDN_PREFIXES=55000 node bench/refresh-apply.mjs
//   BENCH_BUILD_ONLY=1 (the in-process part alone), BENCH_SKIP_BUILD=1 (the controller part alone),
//   BENCH_LOOKUP_ROUNDS=10 BENCH_LOOKUP_SECONDS=3 (the lookup's interleaved rounds), BENCH_CONTROLLER_ROUNDS=3
//   (incremental and full refreshes of the change, interleaved)

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import postgres from "postgres";
import { forkController } from "./controller-process.mjs";
import { closedLoopLoad } from "./http-load.mjs";
import { publicSlash24s, xorshift } from "./random.mjs";
import { refreshToEnd } from "./refresh-job.mjs";

const require = createRequire(import.meta.url);
const asnDir = dirname(require.resolve("@ip-location-db/asn/package.json"));
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"r".repeat(43)}`;
const CDN_MODULES = Number(process.env.BENCH_CDN_MODULES || 19);
const CDN_PREFIXES = Number(process.env.BENCH_CDN_PREFIXES || 55_000);
const ASNS = Number(process.env.BENCH_ASNS || 400);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const CONTROLLER_ROUNDS = Number(process.env.BENCH_CONTROLLER_ROUNDS || 3);
const LOOKUP_ROUNDS = Number(process.env.BENCH_LOOKUP_ROUNDS || 10);
const LOOKUP_SECONDS = Number(process.env.BENCH_LOOKUP_SECONDS || 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;

// Deterministic feeds: module k gets its own /24s (IPv4) and /48s (IPv6, one in ten). Only their
// texts are kept (the lists are made again when needed).
const originals = [];
{
  const all = publicSlash24s(CDN_MODULES * CDN_PREFIXES, xorshift(7));
  for (let k = 0; k < CDN_MODULES; k++) {
    const v4 = all.slice(k * CDN_PREFIXES, (k + 1) * CDN_PREFIXES);
    const v6 = Array.from({ length: Math.floor(CDN_PREFIXES / 10) }, (_, i) => `2a0${k % 10}:${k.toString(16)}:${i.toString(16)}::/48`);
    originals.push(`${[...v4, ...v6].join("\n")}\n`);
  }
}
const texts = [...originals];
const feedLines = (k) => originals[k].trimEnd().split("\n");
// 1% of a feed's prefixes replaced by /24s of no feed (100-179.x: the feeds draw 11-99.x).
const changedCount = Math.floor(CDN_PREFIXES / 100);
const fresh = publicSlash24s(changedCount, xorshift(99))
  .map((p) => p.replace(/^(\d+)\./, (_, a) => `${(Number(a) % 80) + 100}.`))
  .join("\n")
  .split("\n");
// The build alone, in this process (no HTTP, no database): a full build of every module against
// the rebuild of one module's 1% change from the last build, and the diff the API answers.
// BENCH_SKIP_BUILD=1 leaves it out.
if (!process.env.BENCH_SKIP_BUILD) {
  const { buildWithState, rebuildRevision } = await import("../packages/controller/dist/services/revisions/revision-incremental.js");
  const { encodeContent } = await import("../packages/controller/dist/services/revisions/revision-store.js");
  const { taggedPrefixes } = await import("../packages/controller/dist/services/revisions/revision-content.js");
  const { diffTagged, rangeToCidrs } = await import("@rlc/shared/prefix");
  // The top ASNs' address space (the same table the file ASN source reads), as CIDRs.
  const rowsOf = (file) =>
    readFileSync(join(asnDir, file), "utf8")
      .split("\n")
      .map((r) => r.split(","));
  const rows = [...rowsOf("asn-ipv4.csv"), ...rowsOf("asn-ipv6.csv")].filter((r) => r[2]);
  const perAsn = new Map();
  for (const r of rows) perAsn.set(r[2], (perAsn.get(r[2]) ?? 0) + 1);
  const top = new Set(
    [...perAsn]
      .sort((a, b) => b[1] - a[1])
      .slice(0, ASNS)
      .map(([a]) => a),
  );
  // Read back from text, as a source's prefixes are (flat strings: built ones are V8 cons strings,
  // which parse slower).
  const asnPrefixes = rows
    .filter((r) => top.has(r[2]))
    .flatMap((r) => rangeToCidrs(r[0], r[1]))
    .join("\n")
    .split("\n");
  const input = [
    { module_id: "00000000-0000-0000-0000-0000000000aa", name: "top-asns", community: "65000:1", prefixes: asnPrefixes },
    ...texts.map((text, k) => ({
      module_id: `00000000-0000-0000-0000-0000000001${String(k).padStart(2, "0")}`,
      name: `cdn-${k}`,
      community: `65000:${100 + (k % 5)}`,
      prefixes: text.trimEnd().split("\n"),
    })),
  ];
  const total = input.reduce((n, m) => n + m.prefixes.length, 0);
  let t = performance.now();
  const first = buildWithState(input, {});
  const buildMs = performance.now() - t;
  t = performance.now();
  encodeContent(first.built.content);
  const encodeMs = performance.now() - t;
  const n = changedCount;
  const changed = input.map((m, i) => (i === 4 ? { ...m, prefixes: [...fresh, ...m.prefixes.slice(n)] } : m));
  let state = first.state;
  for (let r = 0; r < Number(process.env.R || 10); r++) {
    const t0 = performance.now();
    const cpu = process.cpuUsage();
    const inc = rebuildRevision(state, r % 2 ? input : changed, {}, new Set([input[4].module_id]));
    const c = process.cpuUsage(cpu);
    console.log(`round ${r}: ${(performance.now() - t0).toFixed(0)} ms wall, cpu ${((c.user + c.system) / 1000).toFixed(0)}; ${Object.entries(inc.phases).map(([k, v]) => `${k} ${v.toFixed(1)}`).join(", ")}`);
    state = inc.state;
    await new Promise((r) => setTimeout(r, 300));
  }
}
