// The agent's record of a confirmed delta apply (StateStore.recordApplied: bundle, prefixes,
// applied.json, each fsynced), two ways, interleaved on two state directories: the delta
// appended to the prefix log, and the whole section written again (what every apply did before
// the log; what a fold of the log into a new base does now). Deltas move one community set of
// 100 and back, as in agent-apply-cpu.mjs; the logged side folds its log when it is due.
//   npx turbo run build --output-logs=errors-only && node bench/agent-record.mjs
//   BENCH_PREFIXES=1200000 BENCH_ROUNDS=40 node bench/agent-record.mjs
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { diffPrefixLines, encodePrefixSection, sha256Hex, splitSection } from "@rlc/shared/bundle";
import { StateStore } from "../packages/agent/dist/state.js";
import { asnInput } from "./asn-input.mjs";

const PREFIXES = Number(process.env.BENCH_PREFIXES ?? 120_000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20);

const input = asnInput(PREFIXES, 100);
const sections = [encodePrefixSection(input.content(0, null)), encodePrefixSection(input.content(1, 0))];
const lines = sections.map((s) => splitSection(s));
const shas = sections.map((s) => sha256Hex(s));
// deltas[i]: the script that gives sections[i] from the other one.
const deltas = [diffPrefixLines(lines[1], lines[0]), diffPrefixLines(lines[0], lines[1])];
const stores = {
  logged: new StateStore(mkdtempSync(join(tmpdir(), "rl-bench-record-"))),
  whole: new StateStore(mkdtempSync(join(tmpdir(), "rl-bench-record-"))),
};
const bundle = Buffer.alloc(4000, 1);
const record = (r) => ({ revision_id: r, sequence: r, digest: `sha256:${r}`, applied_at: new Date().toISOString() });
for (const s of Object.values(stores)) {
  await s.init();
  await s.recordApplied(bundle, record(1), { section: sections[0] });
}
const times = { logged: { wall: [], cpu: [] }, whole: { wall: [], cpu: [] } };
for (let r = 2; r < ROUNDS + 2; r++) {
  const to = (r - 1) % 2;
  for (const side of r % 2 ? ["logged", "whole"] : ["whole", "logged"]) {
    const delta = side === "logged" ? { bytes: deltas[to], baseSha256: shas[1 - to], sha256: shas[to] } : null;
    const t = performance.now();
    const cpu = process.cpuUsage();
    await stores[side].recordApplied(bundle, record(r), { section: sections[to], delta });
    const spent = process.cpuUsage(cpu);
    times[side].wall.push(performance.now() - t);
    times[side].cpu.push((spent.user + spent.system) / 1000);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
const summary = (t) => ({
  wallMedianMs: +median(t.wall).toFixed(1),
  wallMeanMs: +mean(t.wall).toFixed(1),
  cpuMedianMs: +median(t.cpu).toFixed(1),
  cpuMeanMs: +mean(t.cpu).toFixed(1),
});
console.log(
  JSON.stringify({
    prefixes: PREFIXES,
    sectionBytes: sections[0].length,
    deltaBytes: deltas[1].length,
    logged: summary(times.logged),
    whole: summary(times.whole),
    wallRatio: +(median(times.whole.wall) / median(times.logged.wall)).toFixed(1),
  }),
);
// A restart's read of what the logged side left: its base and the records logged since.
const t = performance.now();
const cpu = process.cpuUsage();
const read = await new StateStore(stores.logged.dir).readLastPrefixes();
const spent = process.cpuUsage(cpu);
if (!read || !Buffer.from(read).equals(sections[ROUNDS % 2])) throw new Error("the restart read another section");
const logBytes = existsSync(join(stores.logged.dir, "last-prefixes.log")) ? statSync(join(stores.logged.dir, "last-prefixes.log")).size : 0;
console.log(JSON.stringify({ restartReadMs: Math.round(performance.now() - t), restartReadCpuMs: Math.round((spent.user + spent.system) / 1000), logBytes }));
for (const s of Object.values(stores)) rmSync(s.dir, { recursive: true, force: true });
