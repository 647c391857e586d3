// One apply fanned out to many agents: the controller (built, PostgreSQL, NATS when it answers,
// HTTP and gRPC listening) in this process and BENCH_FANOUT_AGENTS (default 1,000) real agents
// (startAgent of packages/agent, each with its own state directory, gRPC channel and NATS
// connection) in BENCH_FANOUT_WORKERS (default 2) child processes, with BIRD replaced by a
// recorder: a fake control socket that answers like BIRD 2.0.12 and a `bird -p` that always
// passes. The agents run apart so that the controller's memory and event loop are its own:
// the RSS growth of this process per connected agent is the controller's share. Prints p50/p99
// of the time from POST /v1/apply to each speaker's `applied` report reaching the controller,
// both processes' RSS growth per agent and the CPU the apply took, beside the last figures of
// the in-process run; asserts no time.
//
//   npx turbo run build && node --expose-gc bench/fanout.mjs
//   BENCH_FANOUT_AGENTS=50 BENCH_FANOUT_PREFIXES=10000 node bench/fanout.mjs
//   BENCH_FANOUT_CPU_PROF=/tmp/prof node bench/fanout.mjs   # .cpuprofile of the apply alone, per process
//   BENCH_AGENT_LOG=/tmp/agents.log: every agent's log lines (info), each after the agent's name
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer, connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { eventSubjects, internalSubjects } from "@rlc/proto";
import postgres from "postgres";
import { ask, forkAgents } from "./agent-processes.mjs";
import { publicSlash24s, xorshift } from "./random.mjs";

const AGENTS = Number(process.env.BENCH_FANOUT_AGENTS || 1000);
const WORKERS = Math.max(1, Number(process.env.BENCH_FANOUT_WORKERS || 2));
/** The last figures of the run with the agents in the controller's process (1,000 agents, loaded machine), printed beside this run's. */
const BEFORE = { agents: 1000, notifiedP50: 18_700, notifiedP99: 20_900, p50: 61_000, p99: 75_600, rssPerAgentKiB: 398 };
const PREFIXES = Number(process.env.BENCH_FANOUT_PREFIXES || 1000);
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const KEY = `rlk_BENCHKEY_${"f".repeat(43)}`;
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const ms = (v) => `${v.toFixed(0)} ms`.padStart(9);
const kib = (bytes) => `${(bytes / 1024).toFixed(0)} KiB`;

if (process.argv[2] === "agents") await runAgents();
else await runController();

/**
 * A child process: BIRD's recorder and the agents the parent sends (enrollment tokens), run
 * until the parent says stop; answers its RSS growth and what the recorder saw.
 */
async function runAgents() {
  const { startAgent } = await import("../packages/agent/dist/agent.js");
  const { loadConfig: loadAgentConfig } = await import("../packages/agent/dist/config.js");
  const { createLogger } = await import("../packages/agent/dist/log.js");
  const commands = new Map();
  /** When each `configure timeout` reached the recorder (ms since the epoch, sub-ms): BIRD runs that config on probation. */
  const probationAt = [];
  const STATUS = [
    "1000-BIRD 2.0.12",
    "1011-Router ID is 127.0.0.1",
    " Hostname is bench",
    ` Current server time is ${new Date().toISOString().replace("T", " ").slice(0, 23)}`,
    " Last reboot on 2026-11-22 04:15:30.682",
    " Last reconfiguration on 2026-11-22 04:15:30.682",
    "0013 Daemon is up and running",
  ].join("\n");
  function birdAnswer(command) {
    const verb = command.startsWith("configure timeout") ? "configure timeout" : command;
    commands.set(verb, (commands.get(verb) ?? 0) + 1);
    if (verb === "configure timeout") probationAt.push(performance.timeOrigin + performance.now());
    if (command === "show status") return STATUS;
    if (command.startsWith("show protocols")) return "2002-Name       Proto      Table      State  Since         Info\n0000 ";
    if (command.startsWith("configure timeout")) return "0003 Reconfigured";
    if (command === "configure confirm") return "0018 Reconfiguration confirmed";
    if (command === "configure undo") return "0021 Undo requested";
    return "0000 ";
  }
  const dir = mkdtempSync(join(tmpdir(), "rl-bench-fanout-agents-"));
  const birdSocket = join(dir, "bird.ctl");
  const fakeBird = createNetServer((socket) => {
    let buffer = "";
    socket.setEncoding("utf8");
    socket.on("error", () => {});
    socket.write("0001 BIRD 2.0.12 ready.\n");
    socket.on("data", (chunk) => {
      buffer += chunk;
      for (let i = buffer.indexOf("\n"); i >= 0; i = buffer.indexOf("\n")) {
        const command = buffer.slice(0, i).trim();
        buffer = buffer.slice(i + 1);
        socket.write(`${birdAnswer(command)}\n`);
      }
    });
  });
  await new Promise((r) => fakeBird.listen(birdSocket, r));
  const runner = async () => ({ code: 0, signal: null, stdout: "", stderr: "" });
  const log = createLogger("silent");
  const agents = [];
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  process.on("message", async (msg) => {
    if (msg.type === "start") {
      for (let i = 0; i < msg.agents.length; i += 20) {
        await Promise.all(
          msg.agents.slice(i, i + 20).map(async ({ name, token }) => {
            const home = join(dir, name);
            mkdirSync(join(home, "etc"), { recursive: true });
            const config = loadAgentConfig({
              RL_CONTROLLER_URL: msg.httpUrl,
              // The controller's HTTP is plain here; gRPC is TLS, pinned by the token's CA hash.
              RL_INSECURE: "true",
              RL_ENROLLMENT_TOKEN: token,
              RL_STATE_DIR: join(home, "state"),
              BIRD_CONTROL_SOCKET: birdSocket,
              BIRD_CONFIG_PATH: join(home, "etc", "rl-routes.conf"),
              RL_METRICS_LISTEN: "off",
              RL_POLL_SECONDS: "3600",
            });
            // BENCH_AGENT_LOG=<file>: each agent's info lines there, its name first (which agent stalled, and on what).
            const own = process.env.BENCH_AGENT_LOG ? createLogger("info", (line) => appendFileSync(process.env.BENCH_AGENT_LOG, `${name} ${line}`)) : log;
            agents.push(await startAgent(config, { version: "bench", log: own, runner, hostname: name }));
          }),
        );
      }
      globalThis.gc?.();
      process.send({ type: "started", rssGrowth: process.memoryUsage().rss - rssBefore });
    } else if (msg.type === "calls") {
      // Every agent makes one call of the kind asked at once, as an apply's fetches and reports come.
      await Promise.all(
        agents.map((a) =>
          msg.what === "report" ? a.reporter.report("sessions_changed") : a.client.fetchBundle(msg.revisionId, { baseRevisionId: null, onHead: () => {} }),
        ),
      );
      process.send({ type: "called" });
    } else if (msg.type === "profile") {
      await profile(msg.path);
      process.send({ type: "profiled" });
    } else if (msg.type === "stats") {
      process.send({
        type: "stats",
        cpu: process.cpuUsage(),
        commands: Object.fromEntries(commands),
        probationAt: probationAt.filter((t) => t >= (msg.since ?? 0)),
      });
    } else if (msg.type === "stop") {
      await Promise.all(agents.map((a) => a.stop().catch(() => {})));
      fakeBird.close();
      rmSync(dir, { recursive: true, force: true });
      process.send({ type: "stopped" }, () => process.exit(0));
    }
  });
  process.send({ type: "ready" });
}

/**
 * With BENCH_FANOUT_CPU_PROF: a first call starts this process's CPU profiler, the next writes
 * what it saw to `path` (for Chrome's DevTools or speedscope).
 */
async function profile(path) {
  // A property of the function: the module's top level awaits before a `let` below it is set.
  if (!profile.session) {
    const { Session } = await import("node:inspector/promises");
    profile.session = new Session();
    profile.session.connect();
    await profile.session.post("Profiler.enable");
    await profile.session.post("Profiler.start");
    return;
  }
  const { profile: taken } = await profile.session.post("Profiler.stop");
  const { writeFileSync } = await import("node:fs");
  writeFileSync(path, JSON.stringify(taken));
  profile.session.disconnect();
  profile.session = null;
}

async function runController() {
  const { loadConfig } = await import("../packages/controller/dist/config.js");
  const { startController } = await import("../packages/controller/dist/controller.js");
  const dbName = `rlc_bench_fanout_${process.pid}`;
  const natsUp = await new Promise((resolve) => {
    const u = new URL(natsUrl.split(",")[0].replace(/^nats:/, "http:"));
    const socket = netConnect(Number(u.port || 4222), u.hostname);
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });

  // ---- the revision's prefixes, served as a CDN feed ----
  const feed = `${publicSlash24s(PREFIXES, xorshift(11)).join("\n")}\n`;
  const feedServer = createHttpServer((_req, res) => res.writeHead(200).end(feed));
  await new Promise((r) => feedServer.listen(0, "127.0.0.1", r));

  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE ${dbName}`); // unsafe: a database name is no parameter; made here
  const dbUrl = new URL(adminUrl);
  dbUrl.pathname = `/${dbName}`;

  // ---- the agents' processes: each answers one message of each type it is sent ----
  const workers = [];

  let controller;
  try {
    controller = await startController(
      loadConfig({
        DATABASE_URL: dbUrl.toString(),
        LOG_LEVEL: "silent",
        BOOTSTRAP_API_KEY: KEY,
        APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
        GRPC_HOST: "127.0.0.1",
        GRPC_PORT: "0",
        // Every agent here connects from 127.0.0.1.
        GRPC_MAX_CONNECTIONS_PER_ADDRESS: "10000",
        ...(natsUp ? { NATS_URL: natsUrl } : {}),
      }),
      { logger: false, grpc: true },
    );
    await controller.app.listen({ host: "127.0.0.1", port: 0 });
    const httpUrl = `http://127.0.0.1:${controller.app.server.address().port}`;
    const call = async (method, url, payload) => {
      const res = await controller.app.inject({ method, url, headers: { authorization: `Bearer ${KEY}` }, ...(payload ? { payload } : {}) });
      if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.json();
    };

    // The recorder has no BGP sessions to watch: a probation window would only add its own length
    // (default 10 s) to every agent's time and hide the fan-out being measured.
    // Nor the controller check at its end: it measures the controller's health route under a
    // thousand agents' applies, which is not what this bench is about.
    await call("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 0, probation_check_controller: false } });
    const c = await call("POST", "/v1/communities", { community: "65000:100", title: "bench" });
    const m = await call("POST", "/v1/modules", { name: "feed", type: "IP_RANGES", community_id: c.id });
    await call("POST", `/v1/modules/${m.id}/cdn-sources`, { url: `http://127.0.0.1:${feedServer.address().port}/feed.txt`, format: "text" });
    const refreshed = await call("POST", "/v1/modules/refresh?wait=true");
    if (refreshed.status !== "succeeded") throw new Error(`refresh: ${JSON.stringify(refreshed)}`);
    const revision = await call("GET", `/v1/revisions/${refreshed.result.revision_id}`);

    for (let i = 0; i < WORKERS; i++) {
      workers.push(await forkAgents());
    }

    // ---- the agents: enrolled over HTTP, then running in the workers ----
    globalThis.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const heapBefore = process.memoryUsage().heapUsed;
    const tStart = performance.now();
    const speakers = [];
    for (let i = 0; i < AGENTS; i++) {
      speakers.push(await call("POST", "/v1/speakers", { name: `edge-${i}`, mode: "remote", router_id: "192.0.2.1", asn: 65000 }));
    }
    const started = await Promise.all(
      workers.map((w, k) =>
        ask(
          w,
          {
            type: "start",
            httpUrl,
            agents: speakers.map((s, i) => ({ name: `edge-${i}`, token: s.enrollment_token })).filter((_, i) => i % WORKERS === k),
          },
          "started",
        ),
      ),
    );
    const tenantId = (await controller.deps.sql`SELECT tenant_id FROM speakers LIMIT 1`)[0].tenant_id;
    for (let i = 0; ; i++) {
      const [{ n }] = await controller.deps.sql`SELECT count(*)::int AS n FROM speakers WHERE last_report_at IS NOT NULL`;
      if (n >= AGENTS) break;
      if (i > 600) throw new Error(`only ${n} of ${AGENTS} agents reported after start`);
      await new Promise((r) => setTimeout(r, 100));
    }
    await new Promise((r) => setTimeout(r, 1000)); // Watch streams and NATS subscriptions settle
    const startMs = performance.now() - tStart;
    globalThis.gc?.();
    const rssConnected = process.memoryUsage().rss;
    const heapConnected = process.memoryUsage().heapUsed;
    const agentsCpu0 = await Promise.all(workers.map((w) => ask(w, { type: "stats" }, "stats")));
    const profDir = process.env.BENCH_FANOUT_CPU_PROF;
    if (profDir) {
      mkdirSync(profDir, { recursive: true });
      await Promise.all(workers.map((w) => ask(w, { type: "profile", path: "start" }, "profiled")));
      await profile("start");
    }
    const cpu0 = process.cpuUsage();

    // ---- one apply to all of them ----
    const notified = new Map();
    const applied = new Map();
    const unsubscribe = [
      controller.deps.bus.subscribe(internalSubjects.notify(tenantId, "*"), (msg, subject) => {
        if (msg?.type === "new_revision" && !notified.has(subject.split(".")[3])) notified.set(subject.split(".")[3], performance.now());
      }),
      controller.deps.bus.subscribe(eventSubjects.status(tenantId, "*"), (msg) => {
        if (msg?.reason === "applied" && msg.applied_revision_id === revision.revision_id && !applied.has(msg.speaker_id))
          applied.set(msg.speaker_id, performance.now());
      }),
    ];
    const t0 = performance.now();
    const wall0 = Date.now();
    const mark0 = process.hrtime.bigint() / 1000n;
    const accepted = await call("POST", "/v1/apply", { timeout_seconds: 300 });
    // Read when its job_finished event comes (a poll a second besides): polling at a pace that
    // times the end well cost the controller more CPU than the agents' calls being measured.
    let job;
    let poke = null;
    const unsubscribeJob = controller.deps.bus.subscribe(eventSubjects.jobFinished(tenantId, accepted.job_id), () => poke?.());
    for (;;) {
      job = await call("GET", `/v1/jobs/${accepted.job_id}`);
      if (!["queued", "running", "awaiting"].includes(job.status)) break;
      await new Promise((r) => {
        const timer = setTimeout(r, 1000);
        poke = () => {
          clearTimeout(timer);
          r();
        };
      });
    }
    unsubscribeJob();
    const tJob = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    if (profDir) {
      await profile(join(profDir, "controller.cpuprofile"));
      await Promise.all(workers.map((w, k) => ask(w, { type: "profile", path: join(profDir, `agents-${k}.cpuprofile`) }, "profiled")));
      console.log(`CPU profiles of the apply in ${profDir}`);
    }
    // For reading a --cpu-prof profile of the apply alone (its times are these microseconds).
    if (process.env.BENCH_FANOUT_MARKS) console.log(`marks ${mark0} ${process.hrtime.bigint() / 1000n}`);
    for (const u of unsubscribe) u();
    const agentsCpu = (await Promise.all(workers.map((w) => ask(w, { type: "stats" }, "stats")))).map((s, i) => ({
      cpu: s.cpu.user + s.cpu.system - agentsCpu0[i].cpu.user - agentsCpu0[i].cpu.system,
      system: s.cpu.system - agentsCpu0[i].cpu.system,
      commands: s.commands,
    }));
    const outcomes = {};
    for (const s of job.result?.speakers ?? job.error?.speakers ?? []) outcomes[s.status] = (outcomes[s.status] ?? 0) + 1;
    if (job.status !== "succeeded") console.log(`apply ${job.status}: ${JSON.stringify(job.error).slice(0, 400)}`);

    const toApplied = [...applied.values()].map((t) => t - t0);
    const toNotified = [...notified.values()].map((t) => t - t0);
    const afterNotify = [...applied].map(([id, t]) => t - (notified.get(id) ?? t0));
    const bytes = (await controller.deps.sql`SELECT avg(length(envelope))::int AS b FROM bundles`)[0].b;
    const count = (stats, verb) => stats.reduce((n, s) => n + (s.commands[verb] ?? 0), 0);
    const configures = count(agentsCpu, "configure timeout") - count(agentsCpu0, "configure timeout");
    const confirms = count(agentsCpu, "configure confirm") - count(agentsCpu0, "configure confirm");
    console.log(
      `one apply of ${revision.prefix_count_v4 + revision.prefix_count_v6} prefixes (bundle head ${(bytes / 1024).toFixed(1)} KiB) to ${AGENTS} agents ` +
        `(startAgent in ${WORKERS} child processes, BIRD replaced by a recorder; wake-ups gRPC Watch${natsUp ? " + NATS" : ""}; agents up in ${(startMs / 1000).toFixed(1)} s)`,
    );
    console.log(
      `  speakers applied           ${applied.size} of ${AGENTS}; job ${job.status} ${JSON.stringify(outcomes)}; BIRD recorder saw ${configures} configure, ${confirms} confirm after the start`,
    );
    console.log(
      `  POST → notified            p50 ${ms(pct(toNotified, 0.5))}  p99 ${ms(pct(toNotified, 0.99))}  (before: p50 ${ms(BEFORE.notifiedP50)}  p99 ${ms(BEFORE.notifiedP99)})`,
    );
    console.log(
      `  POST → job started         ${ms(Date.parse(job.started_at) - wall0)}  first notified ${ms(Math.min(...toNotified))}  last ${ms(Math.max(...toNotified))}`,
    );
    console.log(`  notified → applied report  p50 ${ms(pct(afterNotify, 0.5))}  p99 ${ms(pct(afterNotify, 0.99))}`);
    console.log(
      `  POST → applied report      p50 ${ms(pct(toApplied, 0.5))}  p99 ${ms(pct(toApplied, 0.99))}  max ${ms(Math.max(...toApplied))}  (before: p50 ${ms(BEFORE.p50)}  p99 ${ms(BEFORE.p99)})`,
    );
    console.log(`  POST → job ended           ${ms(tJob)}`);
    const perAgent = (rssConnected - rssBefore) / AGENTS;
    const agentsGrowth = started.reduce((n, s) => n + s.rssGrowth, 0);
    console.log(
      `  controller RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before the agents, ${(rssConnected / 2 ** 20).toFixed(0)} MiB with ${AGENTS} connected: ${kib(perAgent)} per agent, of which JS heap ${kib((heapConnected - heapBefore) / AGENTS)} ` +
        `(the agents' processes: ${kib(agentsGrowth / AGENTS)} per agent; before, both together in one process: ${BEFORE.rssPerAgentKiB} KiB)`,
    );
    console.log(
      `  CPU from POST to job ended: controller ${((cpu.user + cpu.system) / 1e6).toFixed(2)} s (user ${(cpu.user / 1e6).toFixed(1)}, system ${(cpu.system / 1e6).toFixed(1)}), ` +
        `agents ${(agentsCpu.reduce((n, a) => n + a.cpu, 0) / 1e6).toFixed(1)} s (system ${(agentsCpu.reduce((n, a) => n + a.system, 0) / 1e6).toFixed(1)})`,
    );

    // ---- the agents connected and idle: what the controller spends on them each second ----
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const agentsIdle0 = await Promise.all(workers.map((w) => ask(w, { type: "stats" }, "stats")));
    const idle0 = process.cpuUsage();
    const idleT0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, Number(process.env.BENCH_FANOUT_IDLE_MS ?? 5000)));
    const idle = process.cpuUsage(idle0);
    const idleS = (performance.now() - idleT0) / 1000;
    const agentsIdle = (await Promise.all(workers.map((w) => ask(w, { type: "stats" }, "stats")))).reduce(
      (n, x, i) => n + (x.cpu.user + x.cpu.system - agentsIdle0[i].cpu.user - agentsIdle0[i].cpu.system) / 1000,
      0,
    );
    console.log(
      `  CPU with ${AGENTS} agents connected and idle: controller ${((idle.user + idle.system) / 1000 / idleS).toFixed(1)} ms a second, agents' processes ${(agentsIdle / idleS).toFixed(1)} ms a second`,
    );

    // ---- each call alone: every agent reports (or fetches the bundle) at once, CPU per call ----
    const callRounds = Number(process.env.BENCH_FANOUT_CALL_ROUNDS ?? 3);
    const perCall = { report: [], fetch: [] };
    const agentsPerCall = { report: [], fetch: [] };
    const agentsCpuNow = async () =>
      (await Promise.all(workers.map((w) => ask(w, { type: "stats" }, "stats")))).reduce((n, x) => n + (x.cpu.user + x.cpu.system) / 1000, 0);
    for (let r = 0; r < callRounds; r++) {
      for (const what of ["report", "fetch"]) {
        await new Promise((resolve) => setTimeout(resolve, 600)); // the reports' rate limit refills; the evaluations settle
        const agentsBefore = await agentsCpuNow();
        const before = process.cpuUsage();
        await Promise.all(workers.map((w) => ask(w, { type: "calls", what, revisionId: revision.revision_id }, "called")));
        await new Promise((resolve) => setTimeout(resolve, 300)); // what a call sets off after its answer (events, evaluation)
        const used = process.cpuUsage(before);
        perCall[what].push((used.user + used.system) / 1000 / AGENTS);
        agentsPerCall[what].push(((await agentsCpuNow()) - agentsBefore) / AGENTS);
      }
    }
    if (callRounds > 0) {
      const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
      const figures = (xs) => `${med(xs).toFixed(2)} ms [${xs.map((x) => x.toFixed(2)).join(" ")}]`;
      console.log(
        `  CPU per call, ${AGENTS} agents at once (median of ${callRounds}, with what follows in 0.3 s): controller: ` +
          `ReportStatus ${figures(perCall.report)}, GetBundle ${figures(perCall.fetch)}; agents (the report's BIRD snapshot and ` +
          `the bundle's checks included): ReportStatus ${figures(agentsPerCall.report)}, GetBundle ${figures(agentsPerCall.fetch)}`,
      );
    }
  } finally {
    await Promise.all(workers.map((w) => ask(w, { type: "stop" }, "stopped").catch(() => {})));
    await controller?.close().catch((e) => console.error(e));
    feedServer.close();
    await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}
