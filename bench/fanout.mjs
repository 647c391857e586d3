// One apply fanned out to many agents: the controller (built, PostgreSQL, NATS when it answers,
// HTTP and gRPC listening) and BENCH_FANOUT_AGENTS (default 1,000) real agents (startAgent of
// packages/agent, in this process, each with its own state directory, gRPC channel and NATS
// connection), with BIRD replaced by a recorder: a fake control socket that answers like BIRD
// 2.0.12 and a `bird -p` that always passes. Prints p50/p99 of the time from POST /v1/apply to
// each speaker's `applied` report reaching the controller, the process's RSS growth per connected
// agent and the CPU the apply took, beside the last figures of the 200-agent run; asserts no time.
//
//   npx turbo run build && node bench/fanout.mjs
//   BENCH_FANOUT_AGENTS=50 BENCH_FANOUT_PREFIXES=10000 node bench/fanout.mjs
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer, connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { eventSubjects, internalSubjects } from "@rlc/proto";
import postgres from "postgres";
import { startAgent } from "../packages/agent/dist/agent.js";
import { loadConfig as loadAgentConfig } from "../packages/agent/dist/config.js";
import { createLogger } from "../packages/agent/dist/log.js";
import { loadConfig } from "../packages/controller/dist/config.js";
import { startController } from "../packages/controller/dist/controller.js";

const AGENTS = Number(process.env.BENCH_FANOUT_AGENTS || 1000);
/** The last figures before rl-bundle/2 (200 agents, 2-core VM), printed beside this run's. */
const BEFORE = { agents: 200, p50: 3600, p99: 5300 };
const PREFIXES = Number(process.env.BENCH_FANOUT_PREFIXES || 1000);
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const KEY = `rlk_BENCHKEY_${"f".repeat(43)}`;
const dbName = `rlc_bench_fanout_${process.pid}`;
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const ms = (v) => `${v.toFixed(0)} ms`.padStart(9);

const natsUp = await new Promise((resolve) => {
  const u = new URL(natsUrl.split(",")[0].replace(/^nats:/, "http:"));
  const socket = netConnect(Number(u.port || 4222), u.hostname);
  socket.once("connect", () => {
    socket.destroy();
    resolve(true);
  });
  socket.once("error", () => resolve(false));
});

// ---- BIRD, replaced by a recorder ----
const recorded = { connections: 0, commands: new Map(), validations: 0 };
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
  recorded.commands.set(verb, (recorded.commands.get(verb) ?? 0) + 1);
  if (command === "show status") return STATUS;
  if (command.startsWith("show protocols")) return "2002-Name       Proto      Table      State  Since         Info\n0000 ";
  if (command.startsWith("configure timeout")) return "0003 Reconfigured";
  if (command === "configure confirm") return "0018 Reconfiguration confirmed";
  if (command === "configure undo") return "0021 Undo requested";
  return "0000 ";
}
const dir = mkdtempSync(join(tmpdir(), "rl-bench-fanout-"));
const birdSocket = join(dir, "bird.ctl");
const fakeBird = createNetServer((socket) => {
  recorded.connections++;
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
const runner = async () => {
  recorded.validations++;
  return { code: 0, signal: null, stdout: "", stderr: "" };
};

// ---- the revision's prefixes, served as a CDN feed ----
let seed = 11;
const rnd = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 4294967296;
};
const set = new Set();
while (set.size < PREFIXES) set.add(`${11 + Math.floor(rnd() * 89)}.${Math.floor(rnd() * 256)}.${Math.floor(rnd() * 256)}.0/24`);
const feed = `${[...set].join("\n")}\n`;
const feedServer = createHttpServer((_req, res) => res.writeHead(200).end(feed));
await new Promise((r) => feedServer.listen(0, "127.0.0.1", r));

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`); // unsafe: a database name is no parameter; made here
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;

let controller;
const agents = [];
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
  // Nor the controller check at its end: a thousand agents on this one event loop make the
  // controller's health route slow to answer, which says nothing about a fleet of routers.
  await call("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 0, probation_check_controller: false } });
  const c = await call("POST", "/v1/communities", { community: "65000:100", title: "bench" });
  const m = await call("POST", "/v1/modules", { name: "feed", type: "IP_RANGES", community_id: c.id });
  await call("POST", `/v1/modules/${m.id}/cdn-sources`, { url: `http://127.0.0.1:${feedServer.address().port}/feed.txt`, format: "text" });
  const refreshed = await call("POST", "/v1/modules/refresh?wait=true");
  if (refreshed.status !== "succeeded") throw new Error(`refresh: ${JSON.stringify(refreshed)}`);
  const revision = await call("GET", `/v1/revisions/${refreshed.result.revision_id}`);

  // ---- the agents: enrolled over HTTP, then running ----
  globalThis.gc?.();
  const rssBefore = process.memoryUsage().rss;
  const tStart = performance.now();
  const speakers = [];
  for (let i = 0; i < AGENTS; i++) {
    speakers.push(await call("POST", "/v1/speakers", { name: `edge-${i}`, mode: "remote", router_id: "192.0.2.1", asn: 65000 }));
  }
  const log = createLogger("silent");
  for (let i = 0; i < AGENTS; i += 20) {
    await Promise.all(
      speakers.slice(i, i + 20).map(async (speaker, j) => {
        const home = join(dir, `agent-${i + j}`);
        mkdirSync(join(home, "etc"), { recursive: true });
        const config = loadAgentConfig({
          RL_CONTROLLER_URL: httpUrl,
          // The controller's HTTP is plain here; gRPC is TLS, pinned by the token's CA hash.
          RL_INSECURE: "true",
          RL_ENROLLMENT_TOKEN: speaker.enrollment_token,
          RL_STATE_DIR: join(home, "state"),
          BIRD_CONTROL_SOCKET: birdSocket,
          BIRD_CONFIG_PATH: join(home, "etc", "rl-routes.conf"),
          RL_METRICS_LISTEN: "off",
          RL_POLL_SECONDS: "3600",
        });
        agents.push(await startAgent(config, { version: "bench", log, runner, hostname: `edge-${i + j}` }));
      }),
    );
  }
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
  const cpu0 = process.cpuUsage();

  // ---- one apply to all of them ----
  const notified = new Map();
  const applied = new Map();
  const unsubscribe = [
    controller.deps.bus.subscribe(internalSubjects.notify(tenantId, "*"), (msg, subject) => {
      if (msg?.type === "new_revision") notified.set(subject.split(".")[3], performance.now());
    }),
    controller.deps.bus.subscribe(eventSubjects.status(tenantId, "*"), (msg) => {
      if (msg?.reason === "applied" && msg.applied_revision_id === revision.revision_id && !applied.has(msg.speaker_id))
        applied.set(msg.speaker_id, performance.now());
    }),
  ];
  const configuresBefore = recorded.commands.get("configure timeout") ?? 0;
  const t0 = performance.now();
  const accepted = await call("POST", "/v1/apply", { timeout_seconds: 300 });
  let job;
  for (;;) {
    job = await call("GET", `/v1/jobs/${accepted.job_id}`);
    if (!["queued", "running", "awaiting"].includes(job.status)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const tJob = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  for (const u of unsubscribe) u();
  if (job.status !== "succeeded") console.log(`apply ${job.status}: ${JSON.stringify(job.error).slice(0, 400)}`);

  const toApplied = [...applied.values()].map((t) => t - t0);
  const toNotified = [...notified.values()].map((t) => t - t0);
  const afterNotify = [...applied].map(([id, t]) => t - (notified.get(id) ?? t0));
  const bytes = (await controller.deps.sql`SELECT avg(length(envelope))::int AS b FROM bundles`)[0].b;
  console.log(
    `one apply of ${revision.prefix_count_v4 + revision.prefix_count_v6} prefixes (bundle ${(bytes / 1024).toFixed(0)} KiB) to ${AGENTS} agents ` +
      `(in-process startAgent, BIRD replaced by a recorder; wake-ups gRPC Watch${natsUp ? " + NATS" : ""}; agents up in ${(startMs / 1000).toFixed(1)} s)`,
  );
  console.log("  (the agents share this process's event loop with the controller, so the figures are an upper bound)");
  console.log(
    `  speakers applied           ${applied.size} of ${AGENTS}; BIRD recorder saw ${(recorded.commands.get("configure timeout") ?? 0) - configuresBefore} configure, ${recorded.commands.get("configure confirm") ?? 0} confirm`,
  );
  console.log(
    `  POST → notified            p50 ${ms(pct(toNotified, 0.5))}  p99 ${ms(pct(toNotified, 0.99))}  (bundles are signed in one transaction, then all are notified)`,
  );
  console.log(`  notified → applied report  p50 ${ms(pct(afterNotify, 0.5))}  p99 ${ms(pct(afterNotify, 0.99))}`);
  console.log(`  POST → applied report      p50 ${ms(pct(toApplied, 0.5))}  p99 ${ms(pct(toApplied, 0.99))}  max ${ms(Math.max(...toApplied))}`);
  console.log(`  POST → job succeeded       ${ms(tJob)}`);
  console.log(`  before (rl-bundle/1, ${BEFORE.agents} agents)  POST → applied report p50 ${ms(BEFORE.p50)}  p99 ${ms(BEFORE.p99)}`);
  const perAgent = (rssConnected - rssBefore) / AGENTS;
  console.log(
    `  RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before the agents, ${(rssConnected / 2 ** 20).toFixed(0)} MiB with ${AGENTS} connected: ${(perAgent / 1024).toFixed(0)} KiB per agent ` +
      "(controller and agent together: an upper bound on the controller's share; run with --expose-gc for steadier figures)",
  );
  console.log(
    `  CPU from POST to job succeeded: ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s (user ${(cpu.user / 1e6).toFixed(1)}, system ${(cpu.system / 1e6).toFixed(1)}), all agents and the controller`,
  );
} finally {
  await Promise.all(agents.map((a) => a.stop().catch(() => {})));
  await controller?.close().catch((e) => console.error(e));
  fakeBird.close();
  feedServer.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
}
