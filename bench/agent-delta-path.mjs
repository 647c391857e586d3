// The agent's side of a refresh, for bench/bird-configure.mjs: a SyncLoop of the built agent on a
// real BIRD, fed rl-bundle/2 bundles from memory (no network), timed from sync() to BIRD running
// the new config on probation (the loop's own log line) and to the end (confirmed, recorded).
// It runs in a child process (startAgentProcess), as the agent does on a router.
import { fork } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { BirdClient, createProcessRunner } from "@rlc/shared/bird";
import {
  columnOf,
  configBytes,
  contentDigestV2,
  diffPrefixLines,
  encodePrefixSection,
  generateSigningKey,
  pagesOf,
  prefixLines,
  receiveBundle,
  sha256Hex,
  signBundleHead,
} from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { AgentMetrics } from "../packages/agent/dist/http/metrics.js";
import { StateStore } from "../packages/agent/dist/state.js";
import { SyncLoop } from "../packages/agent/dist/sync-loop.js";
import { asnInput } from "./asn-input.mjs";

const TENANT = "00000000-0000-7000-8000-000000000001";
const SPEAKER = "00000000-0000-7000-8000-0000000000aa";

/**
 * `contents`: name → { v4, v6 } prefixes. Sections and delta scripts are encoded once here;
 * each bundle is then a freshly signed head over them (a new revision and sequence each time).
 */
export async function agentPath({ dir, birdc, configPath, contents, runner: given }) {
  const key = await generateSigningKey();
  const sections = {};
  const lines = {};
  // Each content's SHA-256 and page root, once here: hashing 34 MB a round is the controller's
  // work, not the agent's, and would be most of the bench's profile at 1.2M.
  const digests = {};
  const roots = {};
  for (const [name, prefixes] of Object.entries(contents)) {
    sections[name] = encodePrefixSection(prefixes);
    lines[name] = prefixLines(columnOf(prefixes.v4), columnOf(prefixes.v6));
    digests[name] = sha256Hex(sections[name]);
    // The page root, as a controller since migration 0026 signs it (BENCH_PAGES=0: as one before).
    roots[name] = process.env.BENCH_PAGES === "0" ? null : pagesOf(sections[name]).root;
  }
  // Every script between two contents, made now: the line lists are not kept.
  const scripts = new Map();
  for (const from of Object.keys(lines))
    for (const to of Object.keys(lines)) if (from !== to) scripts.set(`${from}>${to}`, diffPrefixLines(lines[from], lines[to]));
  const script = (from, to) => scripts.get(`${from}>${to}`);
  const scriptDigests = new Map([...scripts].map(([k, s]) => [k, sha256Hex(s)]));
  const state = new StateStore(join(dir, "agent-state"));
  await state.init();
  await state.writeSigningKeys([{ key_id: key.keyId, alg: "ed25519", public_key: Buffer.from(key.publicKey).toString("base64"), status: "active" }]);
  mkdirSync(join(dir, "agent-staging"), { recursive: true });

  let revision = 1000;
  let running = null; // { revision, name } BIRD runs
  const served = new Map(); // revision → { full, delta, base }
  async function issue(name, withDelta) {
    const rev = ++revision;
    const config = {
      tenant_id: TENANT,
      speaker_id: SPEAKER,
      revision_id: rev,
      speaker: { router_id: "127.0.0.1", asn: 65000, policies_json: {} },
      bird: { configure_timeout_seconds: 120, confirm_after_seconds: 0 },
      communities: [],
      peers: [],
    };
    const prefixesSha = digests[name];
    const pagesRoot = roots[name];
    const head = async (section, sectionSha, base) =>
      signBundleHead(
        {
          tenant_id: TENANT,
          speaker_id: SPEAKER,
          revision_id: rev,
          sequence: rev,
          issued_at: new Date().toISOString(),
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          digest: contentDigestV2(config, prefixesSha),
          prefixes_sha256: prefixesSha,
          ...(pagesRoot ? { prefixes_pages_sha256: pagesRoot } : {}),
          section: base ? "delta" : "full",
          section_sha256: sectionSha,
          section_size: section.length,
          ...(base ? { base_revision_id: base.revision, base_prefixes_sha256: digests[base.name] } : {}),
        },
        configBytes(config),
        key,
      );
    // The full bundle joined only when fetched: its 34 MB copy each round was the bench's garbage, collected in the agent's measured sync.
    const fullHead = await head(sections[name], digests[name], null);
    const full = () => Buffer.concat([fullHead, sections[name]]);
    let delta = null;
    if (withDelta && running) {
      const s = script(running.name, name);
      delta = { base: running.revision, bytes: Buffer.concat([await head(s, scriptDigests.get(`${running.name}>${name}`), running), s]) };
    }
    // Only what may still be fetched: the bundles of older revisions are the bench's, not the agent's, memory.
    for (const r of served.keys()) if (r < (running?.revision ?? 0)) served.delete(r);
    served.set(rev, { full, delta });
    return { revision_id: rev, digest: contentDigestV2(config, prefixesSha), sequence: rev, issued_at: null };
  }

  let marks = {};
  const log = {
    debug() {},
    warn(msg, fields) {
      console.log(`  agent warn: ${msg} ${JSON.stringify(fields ?? {})}`);
    },
    error(msg, fields) {
      console.log(`  agent error: ${msg} ${JSON.stringify(fields ?? {})}`);
    },
    info(msg) {
      if (msg.startsWith("sync: BIRD runs the new config on probation")) marks.probation = performance.now();
    },
  };
  const real = given ?? createProcessRunner();
  const runner = async (file, args, options) => {
    const t = performance.now();
    const result = await real(file, args, options);
    if (args[0] === "-p") Object.assign(marks, { birdP: performance.now() - t, beforeBirdP: t - marks.start });
    return result;
  };
  let fetched = "";
  const options = {
    client: {
      latest: async () => null,
      signingKeys: async () => [],
      fetchBundle: async (rev, { baseRevisionId: base, onHead } = {}) => {
        const s = served.get(rev);
        const delta = s.delta && base === s.delta.base;
        fetched = delta ? "delta" : "full";
        return receiveBundle(delta ? s.delta.bytes : s.full(), { maxBytes: Number.MAX_SAFE_INTEGER, onHead });
      },
    },
    state,
    reporter: { setError() {}, report: async () => true },
    bird: birdc,
    runner,
    metrics: new AgentMetrics({ version: "bench", speakerId: SPEAKER }),
    clock: createSystemClock(),
    log,
    speakerId: SPEAKER,
    tenantId: TENANT,
    birdMode: "include",
    birdConfigPath: configPath,
    stagingDir: join(dir, "agent-staging"),
    healthWaitMs: 0,
  };
  let loop = new SyncLoop(options);

  return {
    /** BIRD runs `name` through the agent (untimed), from a full bundle. */
    async setUp(name) {
      const desired = await issue(name, false);
      if ((await loop.sync({ reason: "manual", desired })) !== "applied") throw new Error("the agent did not apply the base");
      running = { revision: desired.revision_id, name };
    },
    /** A new SyncLoop on the same state: nothing held in memory, as after a restart. */
    restart() {
      loop = new SyncLoop(options);
    },
    /** The loop dropped (a bench measures what it held); restart() makes another. */
    release() {
      loop = null;
    },
    /** `name` as a delta from what runs; answers the times in ms and what was fetched. */
    async change(name) {
      const desired = await issue(name, true);
      const t = performance.now();
      marks = { start: t };
      const window = [process.hrtime.bigint()];
      const main = mainThreadNs();
      const cpu = process.cpuUsage();
      const result = await loop.sync({ reason: "manual", desired });
      const spent = process.cpuUsage(cpu);
      const mainSpent = mainThreadNs() - main;
      window.push(process.hrtime.bigint());
      const end = performance.now();
      if (result !== "applied") throw new Error(`the agent answered ${result}`);
      running = { revision: desired.revision_id, name };
      return {
        toProbation: marks.probation - t,
        total: end - t,
        cpu: (spent.user + spent.system) / 1000,
        cpuSystem: spent.system / 1000,
        // The main thread's alone: the agent's JS, its GC pauses and its syscalls, without the GC's helper threads and the thread pool.
        cpuMain: Number.isNaN(mainSpent) ? null : mainSpent / 1e6,
        // When sync() ran, on the clock of a .cpuprofile's timestamps (µs).
        window: window.map((ns) => Number(ns / 1000n)),
        birdP: marks.birdP,
        beforeBirdP: marks.beforeBirdP,
        fetched,
      };
    },
  };
}

/** CPU time of the calling thread so far, in ns (Linux's schedstat; NaN elsewhere). */
function mainThreadNs() {
  try {
    return Number(readFileSync("/proc/thread-self/schedstat", "latin1").split(" ")[0]);
  } catch {
    return Number.NaN;
  }
}

/** The same, in a child process; each call is one message there and back. */
export async function startAgentProcess({ dir, socketPath, configPath, prefixes, sets, changedSet }) {
  const child = fork(fileURLToPath(import.meta.url), ["child", JSON.stringify({ dir, socketPath, configPath, prefixes, sets, changedSet })]);
  let id = 0;
  const waiting = new Map();
  child.on("message", (m) => {
    const w = waiting.get(m.id);
    waiting.delete(m.id);
    if (m.error) w?.reject(new Error(m.error));
    else w?.resolve(m.result);
  });
  const call = (op, arg) =>
    new Promise((resolve, reject) => {
      waiting.set(++id, { resolve, reject });
      child.send({ id, op, arg });
    });
  await call("ready");
  return { setUp: (name) => call("setUp", name), restart: () => call("restart"), change: (name) => call("change", name), stop: () => child.kill() };
}

if (process.argv[2] === "child" && process.send) {
  const o = JSON.parse(process.argv[3]);
  const birdc = new BirdClient({ socketPath: o.socketPath, timeoutMs: 600_000 });
  // The input in a scope of its own: once encoded, the agent's process holds none of it.
  const path = await (() => {
    const input = asnInput(o.prefixes, o.sets);
    return agentPath({ dir: o.dir, birdc, configPath: o.configPath, contents: { base: input.content(0, null), one: input.content(1, o.changedSet) } });
  })();
  process.on("message", async ({ id, op, arg }) => {
    try {
      process.send({ id, result: op === "ready" ? true : await path[op](arg) });
    } catch (error) {
      process.send({ id, error: String(error?.stack ?? error) });
    }
  });
}
