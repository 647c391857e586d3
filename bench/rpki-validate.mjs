// RPKI origin validation at scale: loading a VRP document of 500,000 generated ROAs
// (rpki-client's JSON) into the index, and validating 1,000,000 announced prefixes against it,
// beside the revision build of the same 1,000,000 prefixes without validation (the part of a
// refresh validation adds to), in the same run. A refresh hands the build a module's prefixes as
// one list: without validation it flattens the snapshot groups (collectedPrefixes), with it the
// validation's pass makes that list (checkGroups), so "with / without" is
// (validation + build) / (flatten + build). Prints medians and the ratio; asserts nothing.
//
//   npx turbo run build --output-logs=errors-only && node --expose-gc bench/rpki-validate.mjs
//   BENCH_RUNS=3 …   BENCH_ROAS=500000 BENCH_PREFIXES=1000000 …
import { performance } from "node:perf_hooks";
import { collectedPrefixes } from "../packages/controller/dist/services/ingest/collect.js";
import { checkGroups } from "../packages/controller/dist/services/ingest/rpki-check.js";
import { buildRevision } from "../packages/controller/dist/services/revisions/revision-build.js";
import { parseVrpDocument } from "../packages/controller/dist/sources/rpki-vrps.js";
import { xorshift } from "./random.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROAS = Number(process.env.BENCH_ROAS ?? 500_000);
const PREFIXES = Number(process.env.BENCH_PREFIXES ?? 1_000_000);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const gc = () => globalThis.gc?.();
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
roas.length = 0;
// As a refresh reads them: the snapshot's texts are flat strings (the template literals above
// are rope strings, which the first pass over them would flatten, inside the timing).
const snapshot = JSON.parse(JSON.stringify([...groups.values()]));
groups.clear();
const total = snapshot.reduce((n, g) => n + g.prefixes.length, 0);
console.log(
  `VRP document: ${ROAS.toLocaleString()} ROAs, ${(text.length / 1e6).toFixed(1)} MB of JSON; ${total.toLocaleString()} announced prefixes from ${snapshot.length.toLocaleString()} ASNs`,
);

const runs = { load: [], flatten: [], report: [], drop: [], build: [], buildKept: [] };
// The same steps' CPU time (this process, all its threads): on the shared VM the wall times
// stretch with the other processes' load, the CPU times much less.
const cpuRuns = { load: [], flatten: [], report: [], drop: [], build: [], buildKept: [] };
let heap = 0;
let rss = 0;
let states = null;
let index = null;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const time = (step, fn) => {
  gc();
  const t = performance.now();
  const c = cpuMs();
  const out = fn();
  runs[step].push(performance.now() - t);
  cpuRuns[step].push(cpuMs() - c);
  return out;
};
const build = (prefixes) => buildRevision([{ module_id: "00000000-0000-7000-8000-000000000001", name: "bench", community: "65000:1", prefixes }], {});
// Typed arrays live outside the JS heap: the index's size is heap plus array buffers.
const used = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
for (let r = 0; r < RUNS; r++) {
  index = null;
  gc();
  const before = used();
  index = time("load", () => parseVrpDocument(text).index);
  gc();
  heap = used() - before;
  rss = Math.max(rss, process.memoryUsage().rss);

  const flat = time("flatten", () => collectedPrefixes({ groups: snapshot }));
  time("report", () => checkGroups("m", "report", snapshot, index));
  const kept = time("drop", () => checkGroups("m", "drop_invalid", snapshot, index));
  states = kept.counts;
  time("build", () => build(flat));
  time("buildKept", () => build(kept.prefixes));
  rss = Math.max(rss, process.memoryUsage().rss);
}
const medians = (all) => Object.fromEntries(Object.entries(all).map(([k, v]) => [k, median(v)]));
const m = medians(runs);
const c = medians(cpuRuns);
const ms = (x) => `${x.toFixed(0)} ms`;
const ratios = (x) =>
  `report ${((x.report + x.build) / (x.flatten + x.build)).toFixed(2)}x, drop_invalid ${((x.drop + x.buildKept) / (x.flatten + x.build)).toFixed(2)}x`;
console.log(`states: ${JSON.stringify(states)}`);
console.log(`load (JSON.parse + index) median ${ms(m.load)} (CPU ${ms(c.load)}); index ~${mib(heap)} (heap and array buffers); peak RSS ${mib(rss)}`);
console.log(
  `validate ${total.toLocaleString()} prefixes (report) median ${ms(m.report)} (${((m.report * 1e6) / total).toFixed(0)} ns each; CPU ${ms(c.report)}), drop_invalid ${ms(m.drop)} (CPU ${ms(c.drop)}); the flatten it replaces ${ms(m.flatten)} (CPU ${ms(c.flatten)})`,
);
console.log(
  `revision build without validation median ${ms(m.build)} (CPU ${ms(c.build)}); of what drop_invalid keeps (${states.valid + states.not_found} prefixes) ${ms(m.buildKept)} (CPU ${ms(c.buildKept)})`,
);
console.log(`with / without, wall: ${ratios(m)}; CPU: ${ratios(c)} (goal ≤ 1.2x; the VRP load runs once per RPKI_REFRESH_MINUTES, not per refresh)`);
