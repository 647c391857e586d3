// BIRD's `configure` of a ~500,000-prefix config, through the speaker's BIRD sequence
// (@rlc/shared/bird loadBirdConfig: render split per community set, compare with what runs,
// `bird -p`, swap in the changed files, `configure timeout`, health check, confirm) against the
// floor: BIRD given the same files by hand (written, then `configure` on the socket), in the
// same run, on the same BIRD. For a 1 % change (one community set of ~100 rewritten, as a
// refresh of one module does) and a 100 % change (every prefix's community set changes).
// The 1 % change also goes through the agent's whole path from a delta bundle (a SyncLoop:
// verify and apply the delta to the kept prefixes, render the changed sets, `bird -p`,
// configure; bench/agent-delta-path.mjs), with what it holds in memory and after a restart.
// Prints medians and ratios; asserts no time.
//
//   npx turbo run build && node bench/bird-configure.mjs
//   BENCH_RUNS=3 BENCH_PREFIXES=100000 node bench/bird-configure.mjs   # a quicker pass
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { BirdClient, createProcessRunner, loadBirdConfig, renderBirdConfig, renderOptionsFor, StaticsCache } from "@rlc/shared/bird";
import { createSystemClock } from "@rlc/shared/time";
import { startBird, stopProcess } from "../test/helpers/lab-daemons.mjs";
import { startAgentProcess } from "./agent-delta-path.mjs";
import { asnInput } from "./asn-input.mjs";

const N = Number(process.env.BENCH_PREFIXES || 500_000);
const RUNS = Number(process.env.BENCH_RUNS || 5);
const SETS = 100;
const s = (ms) => `${(ms / 1000).toFixed(2)} s`.padStart(9);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

if (spawnSync("sh", ["-c", "command -v bird"]).status !== 0) {
  console.log("skipped: bird not on PATH");
  process.exit(0);
}

// ---- input: the @ip-location-db/asn table as CIDRs, ~90 % IPv4, one community set per ASN mod 100
const { v4rows, v6rows, content } = asnInput(N, SETS);
let revision = 0;
const payload = (prefixes) => ({
  tenant_id: "00000000-0000-7000-8000-000000000001",
  speaker_id: "00000000-0000-7000-8000-0000000000aa",
  revision_id: ++revision,
  sequence: revision,
  issued_at: new Date().toISOString(),
  expires_at: new Date(Date.now() + 3600_000).toISOString(),
  digest: `sha256:${String(revision).padStart(64, "0")}`,
  speaker: { router_id: "127.0.0.1", asn: 65000, policies_json: {} },
  bird: { configure_timeout_seconds: 120 },
  communities: [],
  peers: [],
  prefixes,
});
// The smallest set moved onto another community: about 1 % of the prefixes with SETS = 100.
const counts = new Map();
for (const [, set] of [...v4rows, ...v6rows]) counts.set(set, (counts.get(set) ?? 0) + 1);
const onePercentSet = [...counts].sort((a, b) => Math.abs(a[1] - N / 100) - Math.abs(b[1] - N / 100))[0][0];
const base = content(0, null);
const changes = {
  "1 %": content(1, onePercentSet),
  "100 %": content(1, "all"),
};

// ---- BIRD on loopback, include mode, as a router with an operator's bird.conf has it
const dir = mkdtempSync(join(tmpdir(), "rl-bench-configure-"));
const etc = join(dir, "etc");
mkdirSync(etc);
const configPath = join(etc, "rl-routes.conf");
writeFileSync(configPath, "# empty\n");
writeFileSync(join(etc, "bird.conf"), 'router id 127.0.0.1;\nprotocol device {\n}\ninclude "rl-routes.conf";\n');
const socketPath = join(dir, "bird.ctl");
const bird = await startBird({ config: join(etc, "bird.conf"), socketPath, pidFile: join(dir, "bird.pid"), logFile: join(dir, "bird.out") });
const birdc = new BirdClient({ socketPath, timeoutMs: 600_000 });
const deps = { birdc, runner: createProcessRunner(), clock: createSystemClock() };
const stagingDir = join(dir, "staging");
// The agent in a process of its own, as on a router: its heap holds its own state only.
const agent = await startAgentProcess({ dir, socketPath, configPath, prefixes: N, sets: SETS, changedSet: onePercentSet });

/** The floor: the files written by hand, `configure`, then BIRD answering again. */
async function byHand(files) {
  for (const name of readdirSync(etc)) if (name.startsWith("rl-routes")) unlinkSync(join(etc, name));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(etc, name), text);
  const t = performance.now();
  const reply = await birdc.command("configure", { timeoutMs: 600_000 });
  if (reply.code !== 3 && reply.code !== 4) throw new Error(`configure: ${reply.text}`);
  await birdc.command("show status", { timeoutMs: 600_000 });
  return performance.now() - t;
}

/** The speaker's sequence, from the bundle's payload to BIRD confirmed. */
async function ours(p) {
  const t = performance.now();
  const loaded = await loadBirdConfig(deps, { payload: p, mode: "include", configPath, stagingDir });
  if (!loaded.configured) throw new Error("nothing was configured");
  return performance.now() - t;
}

const split = (prefixes) => renderBirdConfig(payload(prefixes), renderOptionsFor("include", configPath)).files;
const inline = (prefixes) => renderBirdConfig(payload(prefixes), { mode: "include", includeName: "rl-routes.conf" }).files;

try {
  const version = /BIRD version (\S+)/.exec(spawnSync("bird", ["--version"], { encoding: "utf8" }).stderr)?.[1] ?? "?";
  console.log(
    `input: ${v4rows.length} IPv4 + ${v6rows.length} IPv6 prefixes of @ip-location-db/asn in ${SETS} community sets (ASN mod ${SETS}); BIRD ${version}; ${RUNS} runs, medians`,
  );
  console.log(`1 % change: set ${onePercentSet} (${counts.get(onePercentSet)} prefixes) moves to another community; 100 %: every set does`);
  const results = {};
  for (const [label, changed] of Object.entries(changes)) {
    const m = { inline: [], split: [], ours: [], oursFiles: [], agent: [], agentRestarted: [] };
    for (let run = 0; run < RUNS; run++) {
      // Each method starts from BIRD running the base content, laid out as that method lays it out.
      await byHand(inline(base));
      m.inline.push(await byHand(inline(changed)));
      await byHand(split(base));
      m.split.push(await byHand(split(changed)));
      for (const name of readdirSync(etc)) if (name.startsWith("rl-routes")) unlinkSync(join(etc, name));
      await ours(payload(base));
      const before = new Map(readdirSync(etc).map((f) => [f, readFileSync(join(etc, f), "utf8")]));
      m.ours.push(await ours(payload(changed)));
      m.oursFiles.push(
        readdirSync(etc).filter((f) => f.startsWith("rl-routes") && !f.endsWith(".rl-prev") && before.get(f) !== readFileSync(join(etc, f), "utf8")).length,
      );
      if (label !== "1 %") continue;
      await agent.setUp("base");
      m.agent.push(await agent.change("one"));
      await agent.setUp("base");
      agent.restart();
      m.agentRestarted.push(await agent.change("one"));
      if (m.agent.at(-1).fetched !== "delta" || m.agentRestarted.at(-1).fetched !== "delta") throw new Error("the agent did not take the delta");
    }
    results[label] = m;
  }
  // The same bytes again: the sequence compares and stops before `bird -p`.
  const same = payload(base);
  await ours(same);
  const again = [];
  const againCached = [];
  const statics = new StaticsCache();
  for (let run = 0; run < RUNS; run++) {
    for (const [times, cache] of [
      [again, undefined],
      [againCached, statics],
    ]) {
      const t = performance.now();
      const loaded = await loadBirdConfig(deps, { payload: same, mode: "include", configPath, stagingDir, statics: cache });
      times.push(performance.now() - t);
      if (loaded.configured) throw new Error("the same bytes were configured again");
    }
  }

  console.log("");
  console.log(`${"".padEnd(46)}${"1 %".padStart(9)}${"100 %".padStart(9)}`);
  const row = (name, pick) => console.log(`${name.padEnd(46)}${s(pick(results["1 %"]))}${s(pick(results["100 %"]))}`);
  row("floor: one include file by hand + configure", (m) => median(m.inline));
  row("floor: the split files by hand + configure", (m) => median(m.split));
  row("ours: loadBirdConfig (split, bird -p, confirm)", (m) => median(m.ours));
  const ratio = (name, pick) =>
    console.log(`${name.padEnd(46)}${`${pick(results["1 %"]).toFixed(2)}×`.padStart(9)}${`${pick(results["100 %"]).toFixed(2)}×`.padStart(9)}`);
  ratio("ours / floor (split files)", (m) => median(m.ours) / median(m.split));
  ratio("ours / floor (one include file)", (m) => median(m.ours) / median(m.inline));
  console.log(
    `${"files ours rewrote (of the include + statics)".padEnd(46)}${String(median(results["1 %"].oursFiles)).padStart(9)}${String(median(results["100 %"].oursFiles)).padStart(9)}  of ${Object.keys(split(base)).length}`,
  );
  console.log(`${"same bytes again: compared, configure skipped".padEnd(46)}${s(median(again))}`);
  console.log(`${"  the same with the render cache (StaticsCache)".padEnd(46)}${s(median(againCached))}  (its first run renders all)`);
  console.log("");
  console.log("the agent, 1 % change as a delta bundle (verify, apply to the kept prefixes, render, bird -p, configure):");
  const one = results["1 %"];
  const pick = (list, field) => median(list.map((r) => r[field]));
  const agentRow = (name, value) => console.log(`${name.padEnd(46)}${s(value)}`);
  agentRow("  to BIRD on probation, prefixes in memory", pick(one.agent, "toProbation"));
  agentRow("  of which before bird -p (verify, render, compare)", pick(one.agent, "beforeBirdP"));
  agentRow("  of which bird -p", pick(one.agent, "birdP"));
  agentRow("  to confirmed and recorded", pick(one.agent, "total"));
  agentRow("  to BIRD on probation, after a restart", pick(one.agentRestarted, "toProbation"));
  agentRow("  of which before bird -p (verify, render, compare)", pick(one.agentRestarted, "beforeBirdP"));
  agentRow("  of which bird -p", pick(one.agentRestarted, "birdP"));
  console.log(
    `${"  on probation (in memory) / floor (split files)".padEnd(46)}${`${(pick(one.agent, "toProbation") / median(one.split)).toFixed(2)}×`.padStart(9)}`,
  );
} finally {
  agent.stop();
  birdc.close();
  await stopProcess(bird);
  rmSync(dir, { recursive: true, force: true });
}
