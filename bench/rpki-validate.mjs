// RPKI origin validation at scale: loading a VRP document of 500,000 generated ROAs
// (rpki-client's JSON) into the index, and validating 1,000,000 announced prefixes against it,
// beside the revision build of the same 1,000,000 prefixes without validation (the part of a
// refresh validation adds to), in the same run. A refresh hands the build a module's prefixes as
// one list: without validation it flattens the snapshot groups (collectedPrefixes), with it the
// validation's pass makes that list (checkGroups), so "with / without" is
// (validation + build) / (flatten + build): a stricter bound than the goal's, which is about the
// whole refresh (collect, build, writes), measured by rpki-refresh.mjs. Prints medians and the
// ratio; asserts nothing.
//
//   npx turbo run build --output-logs=errors-only && node --expose-gc bench/rpki-validate.mjs
//   BENCH_RUNS=3 …   BENCH_ROAS=500000 BENCH_PREFIXES=1000000 …
import { performance } from "node:perf_hooks";
import { collectedPrefixes } from "../packages/controller/dist/services/ingest/collect.js";
import { checkGroups } from "../packages/controller/dist/services/ingest/rpki-check.js";
import { buildRevision } from "../packages/controller/dist/services/revisions/revision-build.js";
import { parseVrpDocument } from "../packages/controller/dist/sources/rpki-vrps.js";
import { rpkiBenchData } from "./rpki-data.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ROAS = Number(process.env.BENCH_ROAS ?? 500_000);
const PREFIXES = Number(process.env.BENCH_PREFIXES ?? 1_000_000);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mib = (bytes) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;
const gc = () => globalThis.gc?.();
const { text, groups } = rpkiBenchData(ROAS, PREFIXES);
// As a refresh reads them: the snapshot's texts are flat strings (the generator's template literals
// are rope strings, which the first pass over them would flatten, inside the timing).
const snapshot = JSON.parse(JSON.stringify(groups));
groups.length = 0;
const total = snapshot.reduce((n, g) => n + g.prefixes.length, 0);
console.log(
  `VRP document: ${ROAS.toLocaleString()} ROAs, ${(text.length / 1e6).toFixed(1)} MB of JSON; ${total.toLocaleString()} announced prefixes from ${snapshot.length.toLocaleString()} ASNs`,
);

const runs = { load: [], flatten: [], report: [], drop: [], build: [], buildKept: [] };
// The same steps' CPU time (this process, all its threads): on the shared VM the wall times
// stretch with the other processes' load, the CPU times much less.
const cpuRuns = { load: [], flatten: [], report: [], drop: [], build: [], buildKept: [] };
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
for (let r = 0; r < RUNS; r++) {
  index = null;
  gc();
  index = time("load", () => parseVrpDocument(text).index);
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
console.log(`load (JSON.parse + index) median ${ms(m.load)} (CPU ${ms(c.load)}); index ${mib(index.bytes)} of typed arrays; peak RSS ${mib(rss)}`);
console.log(
  `validate ${total.toLocaleString()} prefixes (report) median ${ms(m.report)} (${((m.report * 1e6) / total).toFixed(0)} ns each; CPU ${ms(c.report)}), drop_invalid ${ms(m.drop)} (CPU ${ms(c.drop)}); the flatten it replaces ${ms(m.flatten)} (CPU ${ms(c.flatten)})`,
);
console.log(
  `revision build without validation median ${ms(m.build)} (CPU ${ms(c.build)}); of what drop_invalid keeps (${states.valid + states.not_found} prefixes) ${ms(m.buildKept)} (CPU ${ms(c.buildKept)})`,
);
console.log(`with / without, wall: ${ratios(m)}; CPU: ${ratios(c)} (goal ≤ 1.2x; the VRP load runs once per RPKI_REFRESH_MINUTES, not per refresh)`);
