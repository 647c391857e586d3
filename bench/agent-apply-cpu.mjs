// One agent's delta apply, in-process, BIRD replaced by a recorder (no `bird -p`, a control
// "socket" that answers like BIRD 2.0.12): the CPU and wall of SyncLoop.sync for a delta that
// moves one community set of `BENCH_SETS` (1 % by default; its prefixes are all over the
// table) and back, or drops `BENCH_EDITS` prefixes spread evenly and puts them back, and the heap the agent
// keeps between applies (agentMB: heap and buffers freed when the SyncLoop is dropped). What
// refresh-agents.mjs's agents pay per apply, without the network.
//
// What is measured is the agent's sync() alone: the simulated controller's bundles (their
// contents hashed once at the start, each round's head signed before the clock starts) are made
// outside it. `mainMs`: the CPU of the main thread during sync() (the agent's JS, its share of
// the GC and its syscalls; Linux's /proc/thread-self/schedstat), the number to hold against a
// budget an apply; `cpuMs`: the whole process's (the GC's helper threads and the thread pool too).
// Medians over the rounds after `BENCH_WARMUP` (the JIT warms in the first few).
// `BENCH_CPU_PROF=<file>` writes a .cpuprofile of the rounds and prints the JS functions' self
// time an apply of the samples taken while sync() ran (the harness's work between them left out).
//   npx turbo run build --output-logs=errors-only && node --expose-gc bench/agent-apply-cpu.mjs
//   BENCH_PREFIXES=1200000 BENCH_EDITS=1100 node --expose-gc bench/agent-apply-cpu.mjs
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { agentPath } from "./agent-delta-path.mjs";
import { asnInput } from "./asn-input.mjs";

const PREFIXES = Number(process.env.BENCH_PREFIXES ?? 120_000);
const SETS = Number(process.env.BENCH_SETS ?? 100);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 16);
const WARMUP = Math.min(ROUNDS - 1, Number(process.env.BENCH_WARMUP ?? 6));
/** BENCH_EDITS: the change is that many prefixes dropped and put back, spread evenly (refresh-agents.mjs's 1 % of one feed: ~1,100), not a set moved. */
const EDITS = Number(process.env.BENCH_EDITS ?? 0);

const STATUS = ["BIRD 2.0.12", "Router ID is 127.0.0.1", "Daemon is up and running"].join("\n");
const birdc = {
  async command(command) {
    if (command === "show status") return { code: 13, lines: [], text: STATUS };
    if (command.startsWith("show protocols")) return { code: 0, lines: [], text: "Name       Proto      Table      State  Since         Info\n" };
    if (command.startsWith("configure timeout")) return { code: 3, lines: [], text: "Reconfigured" };
    if (command === "configure confirm") return { code: 18, lines: [], text: "Reconfiguration confirmed" };
    return { code: 0, lines: [], text: "" };
  },
  close() {},
};
const runner = async () => ({ code: 0, signal: null, stdout: "", stderr: "" });

const dir = mkdtempSync(join(tmpdir(), "rl-bench-apply-cpu-"));
const path = await (() => {
  const input = asnInput(PREFIXES, SETS);
  return agentPath({
    dir,
    birdc,
    runner,
    configPath: join(dir, "rl-routes.conf"),
    contents: { base: input.content(0, null), one: EDITS > 0 ? input.thinned(EDITS) : input.content(1, 0) },
  });
})();
await path.setUp("base");
const heap = () => {
  // Twice: buffers a first collection finds unreachable are freed by the next.
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
};
const before = heap();
// BENCH_CPU_PROF=<file>: a .cpuprofile of the rounds alone.
const session = process.env.BENCH_CPU_PROF ? new Session() : null;
if (session) {
  session.connect();
  await session.post("Profiler.enable");
  // A sample each 100 µs: an apply is tens of ms.
  await session.post("Profiler.setSamplingInterval", { interval: 100 });
  await session.post("Profiler.start");
}
const cpu = [];
const main = [];
const system = [];
const wall = [];
const windows = [];
for (let r = 0; r < ROUNDS; r++) {
  const result = await path.change(r % 2 === 0 ? "one" : "base");
  if (result.fetched !== "delta") throw new Error(`round ${r} fetched ${result.fetched}`);
  if (r < WARMUP) continue;
  wall.push(result.total);
  cpu.push(result.cpu);
  main.push(result.cpuMain);
  system.push(result.cpuSystem);
  windows.push(result.window);
}
if (session) {
  const { profile } = await session.post("Profiler.stop");
  writeFileSync(process.env.BENCH_CPU_PROF, JSON.stringify(profile));
  printSelfTimes(profile, windows);
}
const kept = heap();
const rss = process.memoryUsage().rss;
path.release();
const agentMB = +((kept - heap()) / 2 ** 20).toFixed(1);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  JSON.stringify({
    prefixes: PREFIXES,
    rounds: cpu.length,
    mainMs: main[0] === null ? null : Math.round(median(main)),
    cpuMs: Math.round(median(cpu)),
    wallMs: Math.round(median(wall)),
    mainAll: main.map((ms) => (ms === null ? null : Math.round(ms))),
    cpuAll: cpu.map(Math.round),
    // The kernel's part (file writes, fsync): the rest is the agent's own code, GC and hashing threads.
    systemMs: Math.round(median(system)),
    heapMB: +(kept / 2 ** 20).toFixed(1),
    heapGrowthMB: +((kept - before) / 2 ** 20).toFixed(1),
    agentMB,
    rssMB: Math.round(rss / 2 ** 20),
  }),
);
rmSync(dir, { recursive: true, force: true });

/** Self time an apply of each function (top 25) over the samples that fell inside a measured sync(). */
function printSelfTimes(profile, windows) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  let t = profile.startTime;
  let inside = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i];
    const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000;
    if (!windows.some(([from, to]) => t >= from && t < to)) continue;
    const { functionName, url, lineNumber } = byId.get(profile.samples[i]).callFrame;
    const key = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    inside += dt;
  }
  const n = windows.length;
  console.log(`profile: ${(inside / n).toFixed(1)} ms an apply sampled inside sync(), self time an apply:`);
  for (const [key, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${(ms / n).toFixed(1).padStart(7)}  ${key}`);
}
