// The loop an operator lives in, to the routers: one CDN module's feed changes by 1 % in a tenant
// of 20 modules (the address space of the top ASNs from the file ASN source and CDN text feeds
// served locally, as in refresh-apply.mjs; ~120k collected prefixes by default, the issue's
// ~1.4M with the sizes below) and 200 agents (the fan-out harness of fanout.mjs: startAgent in
// child processes, BIRD replaced by a recorder). POST refresh of that module → its revision,
// then POST /v1/apply → each agent notified → each agent's BIRD given the new configuration on
// probation (`configure timeout` reaching the recorder) → each agent's `applied` report; p50/p99
// from the POST refresh. The incremental refresh (the tenant's last build reused) and a full one
// of the same change put back (the snapshot generation moved, as another replica's write or
// REFRESH_MODE=full forces) in the same run. Asserts no time; prints the target of issue 30
// beside the figure.
//
//   npx turbo run build && node bench/refresh-agents.mjs        # ~120k collected prefixes (bench/README.md: why)
//   BENCH_CDN_PREFIXES=55000 BENCH_ASNS=400 BENCH_AGENTS=20 node bench/refresh-agents.mjs   # the ~1.4M tenant
//   BENCH_ROUNDS=3 (incremental and full, interleaved; default 2), BENCH_FANOUT_WORKERS (2),
//   BENCH_PAUSE_MS between rounds (6000: the controller's work after a commit done first)
//   BENCH_CPU_PROF=/tmp/prof: a .cpuprofile of each round, the controller's and each agents' process's
//   BENCH_AGENT_LOG=/tmp/agents.log: every agent's log lines, each after the agent's name (a late agent's stalled fetch shows there)
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { PerformanceObserver, constants as perfConstants, performance } from "node:perf_hooks";
import { eventSubjects, internalSubjects } from "@rlc/proto";
import postgres from "postgres";
import { loadConfig } from "../packages/controller/dist/config.js";
import { startController } from "../packages/controller/dist/controller.js";
import { ask, forkAgents } from "./agent-processes.mjs";
import { publicSlash24s, xorshift } from "./random.mjs";

const require = createRequire(import.meta.url);
const asnDir = dirname(require.resolve("@ip-location-db/asn/package.json"));
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const dbName = `rlc_bench_ra_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"a".repeat(43)}`;
const AGENTS = Number(process.env.BENCH_AGENTS || 200);
const WORKERS = Math.max(1, Number(process.env.BENCH_FANOUT_WORKERS || 2));
const CDN_MODULES = Number(process.env.BENCH_CDN_MODULES || 19);
// A tenth of the issue's ~1.2M by default: each agent holds its revision in memory (~40 MB at 1.2M).
const CDN_PREFIXES = Number(process.env.BENCH_CDN_PREFIXES || 3000);
const ASNS = Number(process.env.BENCH_ASNS || 10);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 2);
/** Between rounds (BENCH_PAUSE_MS): longer than what a controller does after a refresh's commit. */
const PAUSE_MS = Number(process.env.BENCH_PAUSE_MS ?? 6000);
/** The CDN module whose feed changes. */
const CHANGED = Math.min(3, CDN_MODULES - 1);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const m = sorted.length >> 1;
  return sorted.length % 2 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
};
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
const now = () => performance.timeOrigin + performance.now(); // comparable across the processes

// Deterministic feeds: module k gets its own /24s (IPv4) and /48s (IPv6, one in ten); the 1 %
// change replaces a feed's first 1 % with fresh /24s, and putting it back restores the feed.
const rnd = xorshift(7);
const all = publicSlash24s(CDN_MODULES * CDN_PREFIXES + CDN_PREFIXES, rnd);
const fresh = all.slice(CDN_MODULES * CDN_PREFIXES);
const feeds = Array.from({ length: CDN_MODULES }, (_, k) => [
  ...all.slice(k * CDN_PREFIXES, (k + 1) * CDN_PREFIXES),
  ...Array.from({ length: Math.floor(CDN_PREFIXES / 10) }, (_, i) => `2a0${k % 10}:${k.toString(16)}:${i.toString(16)}::/48`),
]);
const texts = feeds.map((f) => `${f.join("\n")}\n`);
const changeFeed = (k, changed) => {
  const n = Math.floor(CDN_PREFIXES / 100);
  texts[k] = `${(changed ? [...fresh.slice(0, n), ...feeds[k].slice(n)] : feeds[k]).join("\n")}\n`;
};
const feedServer = createServer((req, res) => res.writeHead(200).end(texts[Number(req.url.slice(1))] ?? ""));
await new Promise((r) => feedServer.listen(0, "127.0.0.1", r));
const feedBase = `http://127.0.0.1:${feedServer.address().port}`;

// The agents' processes (fanout.mjs's harness).
const workers = [];

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`); // unsafe: a database name is no parameter; made here
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;
let controller;
try {
  controller = await startController(
    loadConfig({
      DATABASE_URL: dbUrl.toString(),
      LOG_LEVEL: "silent",
      BOOTSTRAP_API_KEY: KEY,
      APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
      ASN_SOURCE: `file:${join(asnDir, "asn-ipv4.csv")},${join(asnDir, "asn-ipv6.csv")}`,
      GRPC_HOST: "127.0.0.1",
      GRPC_PORT: "0",
      GRPC_MAX_CONNECTIONS_PER_ADDRESS: "10000",
      NATS_URL: natsUrl,
    }),
    { logger: false, grpc: true },
  );
  const app = controller.app;
  await app.listen({ host: "127.0.0.1", port: 0 });
  const httpUrl = `http://127.0.0.1:${app.server.address().port}`;
  const call = async (method, url, payload) => {
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${KEY}` }, ...(payload ? { payload } : {}) });
    if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  /**
   * The job once it ended: read when its job_finished event comes (given the tenant), else every
   * `pollMs`. A round waits on the event, as `?wait=true` does: polling at a pace that times the
   * end well (20 a second) cost the controller more CPU than any agent's fetch or report.
   */
  const finished = async (jobId, pollMs, tenantId = null) => {
    let poke = null;
    const unsubscribe = tenantId ? controller.deps.bus.subscribe(eventSubjects.jobFinished(tenantId, jobId), () => poke?.()) : () => {};
    try {
      for (let unavailable = 0; ; ) {
        // Under a heavy load the controller's database probe may time out: a 503 for a while, not an end.
        const job = await call("GET", `/v1/jobs/${jobId}`).catch((e) => {
          if (!/: 503 /.test(e.message) || ++unavailable > 100) throw e;
          return { status: "running" };
        });
        if (!["queued", "running", "awaiting"].includes(job.status)) return job;
        await new Promise((r) => {
          const timer = setTimeout(r, pollMs);
          poke = () => {
            clearTimeout(timer);
            r();
          };
        });
      }
    } finally {
      unsubscribe();
    }
  };

  // ---- the tenant ----
  // A recorder has no sessions to watch: no probation window, no controller check at its end (fanout.mjs).
  await call("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 0, probation_check_controller: false } });
  const asnCommunity = await call("POST", "/v1/communities", { community: "65000:1", title: "asn" });
  const asnModule = await call("POST", "/v1/modules", { name: "top-asns", type: "AS_PREFIXES", community_id: asnCommunity.id });
  const counts = new Map();
  for (const r of readFileSync(join(asnDir, "asn-ipv4.csv"), "utf8").split("\n")) {
    const asn = r.split(",")[2];
    if (asn) counts.set(asn, (counts.get(asn) ?? 0) + 1);
  }
  for (const [asn] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, ASNS))
    await call("POST", `/v1/modules/${asnModule.id}/as-entries`, { asn: Number(asn) });
  const communities = [];
  for (let c = 0; c < 5; c++) communities.push(await call("POST", "/v1/communities", { community: `65000:${100 + c}`, title: `cdn ${c}` }));
  const cdn = [];
  for (let k = 0; k < CDN_MODULES; k++) {
    const m = await call("POST", "/v1/modules", { name: `cdn-${k}`, type: "IP_RANGES", community_id: communities[k % 5].id });
    await call("POST", `/v1/modules/${m.id}/cdn-sources`, { url: `${feedBase}/${k}`, format: "text" });
    cdn.push(m.id);
  }
  let t = performance.now();
  const first = await finished((await call("POST", "/v1/modules/refresh")).job_id, 200);
  if (first.status !== "succeeded") throw new Error(`refresh: ${JSON.stringify(first.error)}`);
  const rev = await call("GET", `/v1/revisions/${first.result.revision_id}`);
  console.log(
    `tenant: ${CDN_MODULES + 1} modules, ${first.result.modules.reduce((n, m) => n + m.prefix_count, 0).toLocaleString()} collected prefixes, ` +
      `revision ${(rev.prefix_count_v4 + rev.prefix_count_v6).toLocaleString()} prefixes (full refresh ${s(performance.now() - t)})`,
  );

  // ---- the agents, running the first revision ----
  for (let i = 0; i < WORKERS; i++) {
    workers.push(await forkAgents());
  }
  const speakers = [];
  for (let i = 0; i < AGENTS; i++) speakers.push(await call("POST", "/v1/speakers", { name: `edge-${i}`, mode: "remote", router_id: "192.0.2.1", asn: 65000 }));
  t = performance.now();
  await Promise.all(
    workers.map((w, k) =>
      ask(
        w,
        { type: "start", httpUrl, agents: speakers.map((sp, i) => ({ name: `edge-${i}`, token: sp.enrollment_token })).filter((_, i) => i % WORKERS === k) },
        "started",
      ),
    ),
  );
  const tenantId = (await controller.deps.sql`SELECT tenant_id FROM speakers LIMIT 1`)[0].tenant_id;
  const firstApply = await finished((await call("POST", "/v1/apply", { timeout_seconds: 1800 })).job_id, 500);
  if (firstApply.status !== "succeeded") throw new Error(`first apply: ${firstApply.status} ${JSON.stringify(firstApply.error).slice(0, 400)}`);
  console.log(`${AGENTS} agents (${WORKERS} processes) up and running the first revision in ${s(performance.now() - t)}`);
  await new Promise((r) => setTimeout(r, 2000)); // Watch streams and NATS subscriptions settle

  // ---- one round: the change, refreshed, applied; every agent's times from the POST refresh ----
  const round = async (changed, full) => {
    changeFeed(CHANGED, changed);
    if (full) await controller.deps.sql`UPDATE tenant_generations SET snapshot_generation = snapshot_generation + 1`;
    const notified = new Map();
    const applied = new Map();
    let revisionId = -1;
    const unsubscribe = [
      controller.deps.bus.subscribe(internalSubjects.notify(tenantId, "*"), (msg, subject) => {
        const id = subject.split(".")[3];
        if (msg?.type === "new_revision" && msg.revision_id === revisionId && !notified.has(id)) notified.set(id, now());
      }),
      controller.deps.bus.subscribe(eventSubjects.status(tenantId, "*"), (msg) => {
        if (msg?.reason === "applied" && msg.applied_revision_id === revisionId && !applied.has(msg.speaker_id)) applied.set(msg.speaker_id, now());
      }),
    ];
    const profDir = process.env.BENCH_CPU_PROF;
    let session = null;
    if (profDir) {
      await Promise.all(workers.map((w) => ask(w, { type: "profile", path: "start" }, "profiled")));
      const { Session } = await import("node:inspector/promises");
      session = new Session();
      session.connect();
      await session.post("Profiler.enable");
      await session.post("Profiler.start");
    }
    const agentsCpu0 = await Promise.all(workers.map((w) => ask(w, { type: "stats", since: Number.POSITIVE_INFINITY }, "stats")));
    // The controller's own GC pauses (it runs in this process), up to the revision and in all.
    const gcs = [];
    const gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries())
        gcs.push({ end: performance.timeOrigin + e.startTime + e.duration, ms: e.duration, major: e.detail?.kind === perfConstants.NODE_PERFORMANCE_GC_MAJOR });
    });
    gcObserver.observe({ entryTypes: ["gc"] });
    const t0 = now();
    const cpu0 = process.cpuUsage();
    const job = await call("POST", `/v1/modules/${cdn[CHANGED]}/refresh?wait=true`);
    if (job.status !== "succeeded") throw new Error(`refresh: ${JSON.stringify(job)}`);
    revisionId = job.result.revision_id;
    const tRevision = now() - t0;
    const accepted = await call("POST", "/v1/apply", { timeout_seconds: 600 });
    const tApplyPosted = now() - t0;
    const applyJob = await finished(accepted.job_id, 1000, tenantId);
    const tJob = now() - t0;
    const cpu = process.cpuUsage(cpu0);
    gcObserver.disconnect();
    const gcMs = (upTo, major) => Math.round(gcs.filter((g) => g.end - t0 <= upTo && (!major || g.major)).reduce((n, g) => n + g.ms, 0));
    const gc = { toRevision: gcMs(tRevision, false), toRevisionMajor: gcMs(tRevision, true), all: gcMs(Number.POSITIVE_INFINITY, false) };
    for (const u of unsubscribe) u();
    if (session) {
      const { mkdirSync, writeFileSync } = await import("node:fs");
      mkdirSync(profDir, { recursive: true });
      const tag = full ? "full" : "incremental";
      writeFileSync(join(profDir, `controller-${tag}.cpuprofile`), JSON.stringify((await session.post("Profiler.stop")).profile));
      session.disconnect();
      await Promise.all(workers.map((w, k) => ask(w, { type: "profile", path: join(profDir, `agents-${k}-${tag}.cpuprofile`) }, "profiled")));
    }
    const stats = await Promise.all(workers.map((w) => ask(w, { type: "stats", since: t0 }, "stats")));
    const probation = stats.flatMap((x) => x.probationAt).map((x) => x - t0);
    const agentsCpuMs = stats.reduce((n, x, i) => n + (x.cpu.user + x.cpu.system - agentsCpu0[i].cpu.user - agentsCpu0[i].cpu.system) / 1000, 0);
    const toNotified = [...notified.values()].map((x) => x - t0);
    const toApplied = [...applied.values()].map((x) => x - t0);
    return {
      full,
      build: job.result.build,
      timings: job.result.timings_ms,
      tRevision,
      tApplyPosted,
      tJob,
      applyJob,
      toNotified,
      probation,
      toApplied,
      cpuMs: (cpu.user + cpu.system) / 1000,
      agentsCpuMs,
      gc,
    };
  };
  const line = (xs) => (xs.length ? `p50 ${s(pct(xs, 0.5))}  p99 ${s(pct(xs, 0.99))}  max ${s(Math.max(...xs))}  (${xs.length})` : "none");
  const results = [];
  // Interleaved: the change, incremental; put back, full; again… (each round leaves the feed as the next expects).
  for (let i = 0; i < ROUNDS * 2; i++) {
    // Rounds as an operator's refreshes come, not back to back: the controller's work after a
    // commit (the full section's body written, room for the next: bundle-sections.ts) is done.
    await new Promise((r) => setTimeout(r, PAUSE_MS));
    const r = await round(i % 2 === 0, i % 2 === 1);
    results.push(r);
    console.log(
      `${r.full ? "full       " : "incremental"}  POST refresh → revision ${s(r.tRevision)} (${r.build}), apply posted ${s(r.tApplyPosted)}, apply job ${r.applyJob.status} ${s(r.tJob)}; CPU: controller ${s(r.cpuMs)}, agents ${s(r.agentsCpuMs)} (${(r.agentsCpuMs / AGENTS).toFixed(0)} ms an agent)`,
    );
    console.log(
      `    phases (ms) ${JSON.stringify(r.timings)}; the controller's GC pauses: ${r.gc.toRevision} ms up to the revision (${r.gc.toRevisionMajor} ms of it full collections), ${r.gc.all} ms in the round`,
    );
    console.log(`    → notified      ${line(r.toNotified)}`);
    console.log(`    → on probation  ${line(r.probation)}`);
    console.log(`    → applied       ${line(r.toApplied)}`);
    // From the last report, not the p99: with 200 agents the p99 is the second latest, and one late agent is the job's end.
    if (r.toApplied.length) console.log(`    apply job ended ${s(r.tJob - Math.max(...r.toApplied))} after the last applied report`);
  }
  const med = (full, f) => median(results.filter((r) => r.full === full).map(f));
  const p99 = (xs) => pct(xs, 0.99);
  console.log(`medians of ${ROUNDS} rounds each, ${AGENTS} agents:`);
  for (const full of [false, true]) {
    console.log(
      `  ${full ? "full       " : "incremental"}  → revision ${s(med(full, (r) => r.tRevision))}, → notified p99 ${s(med(full, (r) => p99(r.toNotified)))}, ` +
        `→ on probation p99 ${s(med(full, (r) => p99(r.probation)))}, → applied p99 ${s(med(full, (r) => p99(r.toApplied)))}; ` +
        `CPU: controller ${s(med(full, (r) => r.cpuMs))}, agents ${s(med(full, (r) => r.agentsCpuMs))}`,
    );
  }
  console.log(
    `  POST refresh → ${AGENTS} agents on probation, p99: incremental ${s(med(false, (r) => p99(r.probation)))} (target ≤ 3 s), full ${s(med(true, (r) => p99(r.probation)))}; ` +
      `load average ${loadavg()
        .map((x) => x.toFixed(2))
        .join(" ")}`,
  );
} finally {
  await Promise.all(workers.map((w) => ask(w, { type: "stop" }, "stopped").catch(() => {})));
  await controller?.close().catch((e) => console.error(e));
  feedServer.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => {});
  await admin.end();
}
