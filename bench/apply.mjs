// Two applies of a big revision through every real part, on loopback: the controller (built, with
// PostgreSQL, NATS when it answers, HTTP and gRPC), an `rl-agent run` process (built), BIRD 2 in
// full mode and GoBGP as the peer. First a full apply (a small revision to ~N prefixes), then a
// 1 % change of it (0.5 % dropped, as many added: the agent gets a delta bundle). For each: the
// time from POST /v1/apply to BIRD running the new config on probation (the agent's log), to the
// confirm, and until GoBGP has the routes; and in the same run the floor: BIRD given the same
// files by hand (`configure`, then BIRD answering again), BENCH_RUNS times, interleaved. The
// difference is what the controller and the agent add. Prints figures; asserts no time.
//
//   npx turbo run build && node bench/apply.mjs
//   BENCH_APPLY_PREFIXES=100000 node bench/apply.mjs      # a smaller run
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { eventSubjects, internalSubjects } from "@rlc/proto";
import { BirdClient } from "@rlc/shared/bird";
import postgres from "postgres";
import { loadConfig } from "../packages/controller/dist/config.js";
import { startController } from "../packages/controller/dist/controller.js";
import { freePort, startBird, startGobgp, stopProcess } from "../test/helpers/lab-daemons.mjs";
import { xorshift } from "./random.mjs";

const root = join(import.meta.dirname, "..");
const run = promisify(execFile);
const N = Number(process.env.BENCH_APPLY_PREFIXES || 500_000);
const V6_SHARE = 0.1;
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const KEY = `rlk_BENCHKEY_${"a".repeat(43)}`;
const dbName = `rlc_bench_apply_${process.pid}`;
const s = (ms) => `${(ms / 1000).toFixed(2)} s`.padStart(9);

const RUNS = Number(process.env.BENCH_RUNS || 3);
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
/** The files BIRD reads (full mode: bird.conf and what it includes), as they are now. */
function snapshot() {
  return new Map(readdirSync(etc).map((name) => [name, readFileSync(join(etc, name))]));
}
/** BIRD given `files` by hand: written, `configure`, then BIRD answering again. */
async function byHand(birdc, files) {
  for (const name of readdirSync(etc)) if (!files.has(name)) unlinkSync(join(etc, name));
  for (const [name, bytes] of files) writeFileSync(join(etc, name), bytes);
  const t = performance.now();
  const reply = await birdc.command("configure", { timeoutMs: 600_000 });
  if (reply.code !== 3 && reply.code !== 4) throw new Error(`configure: ${reply.text}`);
  await birdc.command("show status", { timeoutMs: 600_000 });
  return performance.now() - t;
}

const missing = ["bird", "gobgpd", "gobgp"].filter((bin) => spawnSync("sh", ["-c", `command -v ${bin}`]).status !== 0);
if (missing.length) {
  console.log(`skipped: ${missing.join(", ")} not on PATH`);
  process.exit(0);
}

// Deterministic public-looking prefixes (xorshift), far from the bogon ranges.
const rnd = xorshift(7);
function prefixes(n, make) {
  const set = new Set();
  while (set.size < n) set.add(make());
  return [...set];
}
const v4 = prefixes(Math.round(N * (1 - V6_SHARE)), () => `${11 + Math.floor(rnd() * 89)}.${Math.floor(rnd() * 256)}.${Math.floor(rnd() * 256)}.0/24`);
const v6 = prefixes(
  N - v4.length,
  () => `2a0${Math.floor(rnd() * 10)}:${Math.floor(rnd() * 65536).toString(16)}:${Math.floor(rnd() * 65536).toString(16)}::/48`,
);
// Two feeds with their own community, so BIRD gets more than one static protocol.
const half = Math.floor(v4.length / 2);
const big = { "/a.txt": `${v4.slice(0, half).join("\n")}\n`, "/b.txt": `${[...v4.slice(half), ...v6].join("\n")}\n` };
// First a small revision, so that the BGP session is up before the timed apply.
let feeds = { "/a.txt": "11.0.0.0/24\n", "/b.txt": "11.0.1.0/24\n2a01::/48\n" };

const natsUp = await new Promise((resolve) => {
  const u = new URL(natsUrl.split(",")[0].replace(/^nats:/, "http:"));
  const socket = netConnect(Number(u.port || 4222), u.hostname);
  socket.once("connect", () => {
    socket.destroy();
    resolve(true);
  });
  socket.once("error", () => resolve(false));
});

const dir = mkdtempSync(join(tmpdir(), "rl-bench-apply-"));
const etc = join(dir, "etc");
mkdirSync(etc);
const children = [];
const feedServer = createHttpServer((req, res) => res.writeHead(200).end(feeds[req.url] ?? ""));
await new Promise((r) => feedServer.listen(0, "127.0.0.1", r));
const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`); // unsafe: a database name is no parameter; made here
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;

let controller;
let agentLog = "";
try {
  const [birdPort, gobgpPort, apiPort] = [await freePort("127.0.0.1"), await freePort("127.0.0.2"), await freePort("127.0.0.1")];
  writeFileSync(join(etc, "bird.conf"), "router id 127.0.0.1;\nprotocol device {\n}\n");
  children.push(
    await startBird({ config: join(etc, "bird.conf"), socketPath: join(dir, "bird.ctl"), pidFile: join(dir, "bird.pid"), logFile: join(dir, "bird.out") }),
  );
  children.push(await startGobgp({ dir, port: gobgpPort, birdPort, apiPort }));
  const ribCount = async (family) => {
    const { stdout } = await run("gobgp", ["-u", "127.0.0.1", "-p", String(apiPort), "global", "rib", "summary", "-a", family]);
    return Number(/Destination: (\d+)/.exec(stdout)?.[1] ?? 0);
  };

  controller = await startController(
    loadConfig({
      DATABASE_URL: dbUrl.toString(),
      LOG_LEVEL: "silent",
      BOOTSTRAP_API_KEY: KEY,
      APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
      GRPC_HOST: "127.0.0.1",
      GRPC_PORT: "0",
      ...(natsUp ? { NATS_URL: natsUrl } : {}),
    }),
    { logger: false, grpc: true },
  );
  await controller.app.listen({ host: "127.0.0.1", port: 0 });
  const httpUrl = `http://127.0.0.1:${controller.app.server.address().port}`;
  const call = async (method, url, payload) => {
    const res = await controller.app.inject({ method, url, headers: { authorization: `Bearer ${KEY}` }, ...(payload ? { payload } : {}) });
    if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.statusCode === 204 ? null : res.json();
  };

  const speaker = await call("POST", "/v1/speakers", {
    name: "bench",
    mode: "remote",
    router_id: "127.0.0.1",
    asn: 65000,
    policies_json: { local_ip: "127.0.0.1", local_port: birdPort, next_hop_ipv4: "198.51.100.254", next_hop_ipv6: "2001:db8::254" },
  });
  await call("POST", "/v1/peers", {
    name: "gobgp",
    neighbor_address: "127.0.0.2",
    neighbor_port: gobgpPort,
    remote_asn: 65001,
    multihop: true,
    speaker_ids: [speaker.id],
  });
  for (const [name, community, path] of [
    ["feed-a", "65000:100", "/a.txt"],
    ["feed-b", "65000:200", "/b.txt"],
  ]) {
    const c = await call("POST", "/v1/communities", { community, title: name });
    const m = await call("POST", "/v1/modules", { name, type: "IP_RANGES", community_id: c.id });
    await call("POST", `/v1/modules/${m.id}/cdn-sources`, { url: `http://127.0.0.1:${feedServer.address().port}${path}`, format: "text" });
  }
  const refresh = async () => {
    const refreshed = await call("POST", "/v1/modules/refresh?wait=true", { force: true });
    if (refreshed.status !== "succeeded") throw new Error(`refresh: ${JSON.stringify(refreshed)}`);
    return call("GET", `/v1/revisions/${refreshed.result.revision_id}`);
  };
  const untilJob = async (id) => {
    for (;;) {
      const job = await call("GET", `/v1/jobs/${id}`);
      if (!["queued", "running", "awaiting"].includes(job.status)) return job;
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const warmup = await refresh();

  const agent = spawn(process.execPath, [join(root, "packages/agent/dist/main.js"), "run"], {
    cwd: root,
    env: {
      ...process.env,
      RL_CONTROLLER_URL: httpUrl,
      // The controller's HTTP is plain here; gRPC is TLS, pinned by the token's CA hash.
      RL_INSECURE: "true",
      RL_ENROLLMENT_TOKEN: speaker.enrollment_token,
      RL_STATE_DIR: join(dir, "state"),
      BIRD_CONTROL_SOCKET: join(dir, "bird.ctl"),
      BIRD_CONFIG_PATH: join(etc, "bird.conf"),
      RL_BIRD_MODE: "full",
      RL_METRICS_LISTEN: "off",
      RL_LOG_LEVEL: "info",
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(agent);
  agent.stderr.on("data", (c) => {
    agentLog += c.toString();
  });
  for (let i = 0; !(await call("GET", `/v1/speakers/${speaker.id}`)).enrolled_at; i++) {
    if (i > 300) throw new Error(`the agent did not enroll: ${agentLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  const warm = await untilJob((await call("POST", "/v1/apply", { timeout_seconds: 60 })).job_id);
  if (warm.status !== "succeeded") throw new Error(`warm-up apply: ${JSON.stringify(warm.error)}\n${agentLog}`);
  for (let i = 0; (await ribCount("ipv4")) < warmup.prefix_count_v4; i++) {
    if (i > 600) throw new Error("the BGP session to GoBGP did not come up");
    await new Promise((r) => setTimeout(r, 100));
  }
  // Both timed applies, then BIRD given the same files by hand: the window is kept short.
  await call("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 2 } });
  const snapshots = { small: snapshot() };

  const tenantId = (await controller.deps.sql`SELECT tenant_id FROM speakers WHERE id = ${speaker.id}`)[0].tenant_id;
  /** One apply of `revision`, timed from the outside and from the agent's log; done when `converged()` says GoBGP holds it. */
  async function timedApply(revision, converged) {
    const marks = {};
    const unsubscribe = [
      controller.deps.bus.subscribe(internalSubjects.notify(tenantId, speaker.id), (m) => {
        if (m?.type === "new_revision") marks.notified ??= performance.now();
      }),
      controller.deps.bus.subscribe(eventSubjects.status(tenantId, speaker.id), (m) => {
        if (m?.reason === "applied" && m.applied_revision_id === revision.revision_id) marks.reported ??= performance.now();
      }),
    ];
    const epoch = Date.now() - performance.now(); // maps the agent's log times onto performance.now()
    const logFrom = agentLog.length;
    const t0 = performance.now();
    const accepted = await call("POST", "/v1/apply", { timeout_seconds: 600 });
    let allRoutes = null;
    // GoBGP is asked (a `gobgp` process each time) only once BIRD has been reconfigured: asked
    // while the agent and BIRD work, it took their CPU, which the floor by hand does not pay.
    /** The agent's log line `msg` about this revision since the POST, if it has come. */
    const agentLine = (msg) =>
      agentLog
        .slice(logFrom)
        .split("\n")
        .find((l) => l.includes(`"msg":"${msg}"`) && l.includes(`"revision_id":${revision.revision_id}`));
    const PROBATION = "sync: BIRD runs the new config on probation";
    while (performance.now() - t0 < 900_000 && !agentLine(PROBATION)) await new Promise((r) => setTimeout(r, 20));
    while (performance.now() - t0 < 900_000) {
      if (await converged()) {
        allRoutes = performance.now();
        break;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const job = await untilJob(accepted.job_id);
    for (const u of unsubscribe) u();
    if (job.status !== "succeeded") throw new Error(`apply: ${JSON.stringify(job.error)}\n${agentLog}`);
    if (!allRoutes) throw new Error("GoBGP did not get the revision's routes");
    const log = agentLog.slice(logFrom);
    const logAt = (msg) => {
      const line = agentLine(msg);
      if (!line) return null;
      const { time } = JSON.parse(line); // pino: epoch milliseconds
      return (typeof time === "number" ? time : Date.parse(time)) - epoch - t0;
    };
    const [sizes] = await controller.deps.sql`
      SELECT b.envelope_size, b.delta_base_revision_id, length(b.delta_head) AS delta_head_sealed,
             f.size AS full_size, d.size AS delta_size
      FROM bundles b
      JOIN bundle_sections f ON f.tenant_id = b.tenant_id AND f.revision_id = b.revision_id AND f.base_revision_id = 0
      LEFT JOIN bundle_sections d ON d.tenant_id = b.tenant_id AND d.revision_id = b.revision_id AND d.base_revision_id = b.delta_base_revision_id
      WHERE b.speaker_id = ${speaker.id} AND b.revision_id = ${revision.revision_id}`;
    const probationLine = agentLine(PROBATION);
    return {
      steps: probationLine ? JSON.parse(probationLine).steps_ms : null,
      notified: (marks.notified ?? Number.NaN) - t0,
      fetching: logAt("sync: fetching bundle"),
      probation: logAt(PROBATION),
      applied: logAt("sync: applied"),
      reported: (marks.reported ?? Number.NaN) - t0,
      allRoutes: allRoutes - t0,
      jobEnd: Date.parse(job.finished_at) - epoch - t0,
      fullBytes: sizes.envelope_size + sizes.full_size,
      deltaBytes: sizes.delta_size === null ? null : sizes.envelope_size + sizes.delta_size,
      fellBack: log.includes("delta bundle does not fit"),
      skipped: log.includes("configure skipped"),
    };
  }

  // ---- the full apply: a small revision to ~N prefixes ----
  feeds = big;
  let tRefresh = performance.now();
  const full = await refresh();
  const refreshFullMs = performance.now() - tRefresh;
  const wantFull = { v4: full.prefix_count_v4, v6: full.prefix_count_v6 };
  const fullRun = await timedApply(full, async () => (await ribCount("ipv4")) >= wantFull.v4 && (await ribCount("ipv6")) >= wantFull.v6);
  snapshots.full = snapshot();

  // ---- a 1 % change: 0.5 % of the prefixes dropped, as many new ones added ----
  const aLines = big["/a.txt"].trimEnd().split("\n");
  const changes = Math.round((full.prefix_count_v4 + full.prefix_count_v6) / 200);
  const step = Math.max(2, Math.floor(aLines.length / changes));
  const dropped = aLines.filter((_, i) => i % step === 0).slice(0, changes);
  const droppedSet = new Set(dropped);
  const added = prefixes(changes, () => `${100 + Math.floor(rnd() * 27)}.${Math.floor(rnd() * 256)}.${Math.floor(rnd() * 256)}.0/24`);
  feeds = { "/a.txt": `${[...aLines.filter((p) => !droppedSet.has(p)), ...added].join("\n")}\n`, "/b.txt": big["/b.txt"] };
  tRefresh = performance.now();
  const changed = await refresh();
  const refreshDeltaMs = performance.now() - tRefresh;
  // Converged when an added prefix's address is routed and a dropped one's no longer is.
  const host = (prefix) => prefix.replace(/\.0\/24$/, ".1");
  const routed = async (address) => {
    const { stdout } = await run("gobgp", ["-u", "127.0.0.1", "-p", String(apiPort), "global", "rib", "-a", "ipv4", address]);
    return stdout.includes("/");
  };
  const deltaRun = await timedApply(changed, async () => (await routed(host(added[added.length - 1]))) && !(await routed(host(dropped[dropped.length - 1]))));
  snapshots.delta = snapshot();

  // ---- the floor: BIRD given the same files by hand, the same two steps, interleaved ----
  await stopProcess(agent);
  const birdc = new BirdClient({ socketPath: join(dir, "bird.ctl"), timeoutMs: 600_000 });
  const floors = { full: [], delta: [] };
  for (let r = 0; r < RUNS; r++) {
    await byHand(birdc, snapshots.small);
    floors.full.push(await byHand(birdc, snapshots.full));
    floors.delta.push(await byHand(birdc, snapshots.delta));
  }
  const floorFull = median(floors.full);
  const floorDelta = median(floors.delta);

  const line = (label, ms, note = "") => console.log(`  ${label.padEnd(52)}${ms === null ? "        ?" : s(ms)}${note ? `  ${note}` : ""}`);
  const kib = (n) => (n === null ? "none" : `${(n / 1024).toFixed(0)} KiB`);
  console.log(
    `apply of ${(wantFull.v4 + wantFull.v6).toLocaleString()} prefixes (v4 ${wantFull.v4.toLocaleString()}, v6 ${wantFull.v6.toLocaleString()}; N = ${N.toLocaleString()}); wake-ups: gRPC Watch${natsUp ? " + NATS" : " (NATS not reachable)"}; BIRD ${/BIRD version (\S+)/.exec(spawnSync("bird", ["--version"], { encoding: "utf8" }).stderr)?.[1] ?? "?"} (full mode), GoBGP as the peer`,
  );
  for (const [title, r, floor, refreshMs, target] of [
    ["full apply (small revision → all prefixes)", fullRun, floorFull, refreshFullMs, `target: BIRD's own configure + 2 s = ${s(floorFull + 2000).trim()}`],
    [`1 % change (${changes.toLocaleString()} dropped, ${changes.toLocaleString()} added)`, deltaRun, floorDelta, refreshDeltaMs, "target: 1.5 s"],
  ]) {
    console.log(`${title}; refresh before it ${s(refreshMs).trim()}`);
    console.log(
      `  bundle: full ${kib(r.fullBytes)}, delta ${kib(r.deltaBytes)}${r.deltaBytes ? ` (1/${Math.round(r.fullBytes / r.deltaBytes)})` : ""}${r.fellBack ? "; the agent fell back to the full bundle" : ""}${r.skipped ? "; configure skipped" : ""}`,
    );
    line("POST → bundle issued, agent notified", r.notified);
    line("POST → agent fetching (agent log)", r.fetching);
    line("POST → BIRD runs it on probation (agent log)", r.probation, target);
    if (r.steps)
      console.log(
        `    the agent's steps (ms): ${Object.entries(r.steps)
          .map(([k, v]) => `${k} ${Math.round(v)}`)
          .join(", ")}`,
      );
    line("BIRD given the same files by hand: configure", floor, `median of ${RUNS}`);
    line("ours beyond BIRD's own configure", r.probation === null ? null : r.probation - floor);
    line("POST → agent confirmed (window 2 s)", r.applied);
    line("POST → controller has the applied report", r.reported);
    line("POST → GoBGP has it", r.allRoutes);
    line("POST → apply job finished", r.jobEnd);
  }
} finally {
  const [bird, gobgpd, ...agents] = children;
  for (const child of agents) await stopProcess(child);
  await controller?.close().catch((e) => console.error(e));
  await Promise.all([stopProcess(gobgpd), stopProcess(bird)]);
  feedServer.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
}
