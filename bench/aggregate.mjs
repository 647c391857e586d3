// Prefix algebra benchmark: our aggregatePrefixes against cidr-tools and fast-cidr-tools on
// the real ASN table of @ip-location-db/asn, then aggregateTagged, diffTagged and the
// longest-prefix-match index at the same scale. Prints medians and ratios; exits non-zero
// when the implementations disagree on the result. Never a timed test: see bench/README.md.
//
//   npx tsc -p packages/shared/tsconfig.json && node --expose-gc bench/aggregate.mjs
//   BENCH_RUNS=3 node bench/aggregate.mjs      # fewer runs
//   BENCH_WARMUP=0 …                           # no untimed round first (the default is 1)
//   BENCH_BASELINE=/tmp/prefix-before node --expose-gc bench/aggregate.mjs
//       # also times another build of packages/shared/dist/prefix (a copy of the directory
//       # made before a change), interleaved with this one: before/after from the same run
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";

if (!isMainThread) {
  // fast-cidr-tools, in a worker so that a hang (it never returns on IPv6) can be cut off.
  const { merge } = await import("fast-cidr-tools");
  for (let r = 0; r < workerData.runs; r++) {
    const t = performance.now();
    const out = merge(workerData.prefixes, true);
    parentPort.postMessage({ ms: performance.now() - t, out: r === 0 ? out : undefined });
  }
  process.exit(0);
}

const here = dirname(fileURLToPath(import.meta.url));
const prefix = await import(join(here, "../packages/shared/dist/prefix/index.js"));
const { mergeCidr } = await import("cidr-tools");
const { aggregatePrefixes, aggregateTagged, buildPrefixIndex, canonicalCidr, diffTagged, excludeRanges, rangeToCidrs, removeBogons } = prefix;
const before = process.env.BENCH_BASELINE ? await import(join(process.env.BENCH_BASELINE, "index.js")) : undefined;

const RUNS = Number(process.env.BENCH_RUNS ?? 7);
// Untimed rounds first, each function in turn, so that the medians compare compiled code:
// without one, the first round (and with ours, at ~100 ms a call, the next one or two while
// V8 re-optimises) is mostly the JIT warming up, for every implementation alike.
const WARMUP = Number(process.env.BENCH_WARMUP ?? 1);
const FAST_TIMEOUT_MS = Number(process.env.BENCH_FAST_TIMEOUT_MS ?? 120_000);
let failed = false;

function random(seed) {
  // mulberry32: the same shuffled input on every run
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time(fn, runs = RUNS) {
  const ms = [];
  let out;
  for (let r = 0; r < WARMUP; r++) fn();
  for (let r = 0; r < runs; r++) {
    globalThis.gc?.();
    const t = performance.now();
    out = fn();
    ms.push(performance.now() - t);
  }
  return { ms: median(ms), min: Math.min(...ms), out };
}

/** Times several functions with their runs interleaved, so that load from other processes on
 * the machine falls on all of them alike; medians per function. */
function timeTogether(fns, runs = RUNS) {
  const ms = Object.fromEntries(Object.keys(fns).map((k) => [k, []]));
  const out = {};
  for (let r = 0; r < WARMUP; r++) for (const fn of Object.values(fns)) fn();
  for (let r = 0; r < runs; r++) {
    for (const [name, fn] of Object.entries(fns)) {
      globalThis.gc?.();
      const t = performance.now();
      out[name] = fn();
      ms[name].push(performance.now() - t);
    }
  }
  return Object.fromEntries(Object.keys(fns).map((k) => [k, { ms: median(ms[k]), min: Math.min(...ms[k]), out: out[k] }]));
}

const fmt = (ms) => `${ms.toFixed(1).padStart(8)} ms`;

/** With BENCH_BASELINE: the baseline's version of `fn` under the name `before`, else nothing. */
const baseline = (make) => (before ? { before: make(before) } : {});
/** Prints the baseline's median and the speed-up, and fails the run when its output differs. */
function reportBaseline(label, t, same = (a, b) => JSON.stringify(a) === JSON.stringify(b)) {
  if (!t.before) return;
  const vsTheirs = t.theirs ? `; the baseline ${(t.theirs.ms / t.before.ms).toFixed(1)}x faster than cidr-tools` : "";
  console.log(`  ${label.padEnd(26)} ${fmt(t.before.ms)}   this build ${(t.before.ms / t.ours.ms).toFixed(2)}x faster${vsTheirs}`);
  if (!same(t.before.out, t.ours.out)) {
    console.log(`  MISMATCH: the baseline's output differs (${label})`);
    failed = true;
  }
}

// ---- input: the ASN table as CIDRs --------------------------------------------------------
const asnDir = dirname(createRequire(import.meta.url).resolve("@ip-location-db/asn/package.json"));
function loadTable(file) {
  const rows = [];
  for (const line of readFileSync(join(asnDir, file), "utf8").split("\n")) {
    if (!line) continue;
    const [start, end, asn] = line.split(",", 3);
    for (const cidr of rangeToCidrs(start, end)) rows.push({ cidr, asn: Number(asn) });
  }
  return rows;
}
const t0 = performance.now();
const rows = [...loadTable("asn-ipv4.csv"), ...loadTable("asn-ipv6.csv")];
const table = rows.map((r) => r.cidr);
const v4 = table.filter((p) => !p.includes(":"));
const v6 = table.filter((p) => p.includes(":"));
console.log(
  `input: ${v4.length} IPv4 + ${v6.length} IPv6 CIDRs from asn-ipv4.csv / asn-ipv6.csv (ranges → CIDRs in ${(performance.now() - t0).toFixed(0)} ms)`,
);

// Second input: shuffled, plus ~5% covering parents (1..4 bits shorter) and ~5% duplicates.
const rand = random(42);
const parentOf = (cidr) => {
  const [addr, len] = cidr.split("/");
  return canonicalCidr(`${addr}/${Math.max(8, Number(len) - 1 - Math.floor(rand() * 4))}`, { mode: "mask" });
};
const extras = [];
for (const p of table) {
  const x = rand();
  if (x < 0.05) extras.push(parentOf(p));
  else if (x < 0.1) extras.push(p);
}
const mixed = [...table, ...extras];
for (let i = mixed.length - 1; i > 0; i--) {
  const j = Math.floor(rand() * (i + 1));
  [mixed[i], mixed[j]] = [mixed[j], mixed[i]];
}
const mixedV4 = mixed.filter((p) => !p.includes(":"));
console.log(`second input: shuffled copy + ${extras.length} parents and duplicates = ${mixed.length} prefixes\n`);

// ---- aggregation: ours vs cidr-tools vs fast-cidr-tools -----------------------------------
function runFast(prefixes, runs) {
  return new Promise((resolve) => {
    const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { prefixes, runs } });
    const ms = [];
    let out;
    const timer = setTimeout(() => {
      worker.terminate();
      resolve({ timedOut: true, ms: ms.length ? median(ms) : Number.NaN, out });
    }, FAST_TIMEOUT_MS);
    worker.on("message", (m) => {
      ms.push(m.ms);
      if (m.out) out = m.out;
    });
    worker.on("exit", () => {
      clearTimeout(timer);
      resolve({ timedOut: false, ms: median(ms), out });
    });
    worker.on("error", (e) => {
      clearTimeout(timer);
      resolve({ error: e.message, ms: Number.NaN });
    });
  });
}

const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
const canon = (list) => list.map((p) => canonicalCidr(p.includes("/") ? p : `${p}/${p.includes(":") ? 128 : 32}`));

async function compare(name, all, allV4) {
  console.log(`== aggregate: ${name} (${all.length} prefixes)`);
  const timed = timeTogether({
    ours: () => aggregatePrefixes(all),
    theirs: () => mergeCidr(all),
    oursV4: () => aggregatePrefixes(allV4),
    ...baseline((b) => () => b.aggregatePrefixes(all)),
  });
  const { ours, theirs, oursV4 } = timed;
  const fast = await runFast(allV4, 3);
  const ours4 = ours.out.filter((p) => !p.includes(":"));
  const ct = canon(theirs.out);
  console.log(`  ours         both families ${fmt(ours.ms)}   out ${ours4.length} v4 + ${ours.out.length - ours4.length} v6`);
  console.log(`  cidr-tools   both families ${fmt(theirs.ms)}   out ${ct.length}   ours ${(theirs.ms / ours.ms).toFixed(1)}x faster`);
  console.log(`  ours         IPv4 only     ${fmt(oursV4.ms)}   out ${oursV4.out.length}`);
  if (fast.error || Number.isNaN(fast.ms)) console.log(`  fast-cidr-tools IPv4 only  failed: ${fast.error ?? "timed out before one run"}`);
  else {
    console.log(
      `  fast-cidr-tools IPv4 only  ${fmt(fast.ms)}   out ${fast.out.length}   ours ${(fast.ms / oursV4.ms).toFixed(1)}x faster${fast.timedOut ? " (timed out after the first runs)" : ""}`,
    );
  }
  if (!same(ct, ours.out)) {
    console.log(`  MISMATCH: cidr-tools gave ${ct.length} prefixes, ours ${ours.out.length}`);
    failed = true;
  }
  if (fast.out && !same(canon(fast.out), oursV4.out)) {
    console.log(`  MISMATCH: fast-cidr-tools gave ${fast.out.length} IPv4 prefixes, ours ${oursV4.out.length}`);
    failed = true;
  }
  if (!same(oursV4.out, ours4)) {
    console.log("  MISMATCH: ours differs between the IPv4-only and the mixed call");
    failed = true;
  }
  reportBaseline("baseline, both families", timed, same);
  return ours.out;
}

const aggregated = await compare("ASN table, sorted", table, v4);
await compare("shuffled + parents + duplicates", mixed, mixedV4);

// ---- bogon filter ------------------------------------------------------------------------
const bogonRuns = timeTogether({ ours: () => removeBogons(mixed), ...baseline((b) => () => b.removeBogons(mixed)) }, Math.min(RUNS, 5));
const bogons = bogonRuns.ours;
console.log(`\n== removeBogons (default list, /8 and /16 minimums): ${mixed.length} prefixes`);
console.log(`  ${fmt(bogons.ms)}   kept ${bogons.out.prefixes.length}, dropped ${bogons.out.dropped}, cut ${bogons.out.cut}`);
reportBaseline("baseline", bogonRuns);

// ---- community-aware aggregation ---------------------------------------------------------
const modules = Array.from({ length: 5 }, (_, i) => ({ prefixes: [], communities: [`65000:${100 + i}`] }));
modules[4].communities.push("65000:1:1");
for (const r of rows) modules[r.asn % 5].prefixes.push(r.cidr);
for (const [k, p] of extras.entries()) modules[k % 5].prefixes.push(p); // overlap between modules
const taggedRuns = timeTogether({ ours: () => aggregateTagged(modules), ...baseline((b) => () => b.aggregateTagged(modules)) }, Math.min(RUNS, 5));
const tagged = taggedRuns.ours;
console.log(`\n== aggregateTagged: 5 modules (by ASN mod 5, plus the parents), ${mixed.length} prefixes`);
console.log(`  ${fmt(tagged.ms)} (min ${tagged.min.toFixed(1)})   out ${tagged.out.length} tagged prefixes`);
reportBaseline("baseline", taggedRuns);

// ---- diff of two 500k tagged lists -------------------------------------------------------
const distinct = excludeRanges(table, []).prefixes; // sorted, distinct
const pool = distinct.slice(0, 510_000);
const from = [];
const to = [];
for (let k = 0; k < pool.length; k++) {
  const x = rand();
  const communities = [`65000:${100 + (k % 5)}`];
  if (k < 500_000) from.push({ prefix: pool[k], communities });
  if (k >= 10_000 && x < 0.01) continue; // removed
  to.push({ prefix: pool[k], communities: x < 0.02 ? ["65000:999"] : communities }); // 1% changed
}
const diff = time(() => diffTagged(from, to), Math.min(RUNS, 5));
console.log(`\n== diffTagged: ${from.length} vs ${to.length} tagged prefixes`);
console.log(`  ${fmt(diff.ms)}   added ${diff.out.added.length}, removed ${diff.out.removed.length}, changed ${diff.out.changed.length}`);
const identical = time(() => diffTagged(from, from), Math.min(RUNS, 5));
console.log(`  ${fmt(identical.ms)}   (a list against itself)`);

// ---- longest-prefix-match index ----------------------------------------------------------
const indexInput = [...mixed];
const fill = random(7);
while (indexInput.length < 1_000_000) {
  const a = Math.floor(fill() * 2 ** 32);
  indexInput.push(`${a >>> 24}.${(a >>> 16) & 255}.${(a >>> 8) & 255}.${a & 255}/32`);
}
const items = indexInput.map((p, id) => ({ prefix: p, id }));
const built = time(() => buildPrefixIndex(items), Math.min(RUNS, 3));
const queries = Array.from({ length: 100_000 }, () => aggregated[Math.floor(fill() * aggregated.length)].split("/")[0]);
const index = built.out;
const lookups = time(() => {
  let found = 0;
  for (const q of queries) found += index.lookup(q).length;
  return found;
}, 3);
const longest = time(() => {
  let found = 0;
  for (const q of queries) if (index.longest(q)) found++;
  return found;
}, 3);
console.log(`\n== buildPrefixIndex: ${items.length} prefixes`);
console.log(`  build ${fmt(built.ms)}   100k lookup() ${fmt(lookups.ms)} (${lookups.out} matches)   100k longest() ${fmt(longest.ms)}`);

if (failed) {
  console.log("\nFAILED: the implementations disagree");
  process.exit(1);
}
