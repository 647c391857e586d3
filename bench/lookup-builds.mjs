// Two builds of the controller side by side, each in a process of its own (controller-process.mjs),
// loaded in alternation from this one: a bare Fastify route in each controller's process,
// `GET /v1/auth/session` and `GET /v1/lookup` on a small tenant (200 IP_RANGES entries), for
// SECONDS (2) a load, ROUNDS (10) rounds, the order reversed every other round, so that load
// from other processes falls on both builds alike. Besides rate and p99 it reads the server's
// main-thread CPU a request from /proc (schedstat), which the in-process lookup-latency.mjs
// cannot tell from its client's.
//
//   BENCH_BASELINE_DIST=/path/to/an/earlier/packages/controller/dist node bench/lookup-builds.mjs
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import postgres from "postgres";
import { forkController } from "./controller-process.mjs";
import { closedLoopLoad } from "./http-load.mjs";

if (!process.env.BENCH_BASELINE_DIST) throw new Error("BENCH_BASELINE_DIST: the earlier build's packages/controller/dist");
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const KEY = `rlk_BENCHKEY_${"b".repeat(43)}`;
const SECONDS = Number(process.env.SECONDS ?? 2);
const ROUNDS = Number(process.env.ROUNDS ?? 10);
const KINDS = ["bare", "session", "lookup"];
const builds = { before: process.env.BENCH_BASELINE_DIST, this: null };
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
/** The CPU time (ns) the process's main thread has had. */
const mainThreadNs = (pid) => Number(readFileSync(`/proc/${pid}/schedstat`, "utf8").split(" ")[0]);

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
const controllers = {};
const dbs = [];
try {
  for (const [name, dist] of Object.entries(builds)) {
    const db = `rlc_bench_builds_${name}_${process.pid}`;
    await admin.unsafe(`CREATE DATABASE ${db}`);
    dbs.push(db);
    const dbUrl = new URL(adminUrl);
    dbUrl.pathname = `/${db}`;
    // The child takes its build from the environment at fork time.
    if (dist) process.env.BENCH_CONTROLLER_DIST = dist;
    else delete process.env.BENCH_CONTROLLER_DIST;
    const c = await forkController({ DATABASE_URL: dbUrl.toString(), LOG_LEVEL: "silent", BOOTSTRAP_API_KEY: KEY, HTTP_HOST: "127.0.0.1", HTTP_PORT: "0" });
    controllers[name] = c;
    const call = async (method, url, payload) => {
      const res = await fetch(c.url + url, {
        method,
        headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
        body: JSON.stringify(payload),
      });
      if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    const community = await call("POST", "/v1/communities", { community: "65000:1", title: "bench" });
    const m = await call("POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id });
    c.targets = [];
    for (let i = 0; i < 200; i++) {
      await call("POST", `/v1/modules/${m.id}/ip-range-entries`, { cidr: `${20 + (i % 50)}.${i}.0.0/16` });
      c.targets.push(`${20 + (i % 50)}.${i}.${i % 200}.${1 + (i % 250)}`);
    }
  }
  const run = async (name, kind, seconds) => {
    const c = controllers[name];
    const path = { bare: () => "/bare", session: () => "/v1/auth/session", lookup: (n) => `/v1/lookup?q=${c.targets[n % c.targets.length]}` }[kind];
    const before = mainThreadNs(c.pid);
    const r = await closedLoopLoad(kind === "bare" ? c.bareUrl : c.url, path, seconds, KEY);
    return { ...r, serverUs: (mainThreadNs(c.pid) - before) / 1e3 / (r.rps * seconds) };
  };
  for (const name of Object.keys(builds)) for (const kind of KINDS) await run(name, kind, 1); // warm-up
  const rounds = [];
  const loads = [];
  for (let i = 0; i < ROUNDS; i++) {
    const order = Object.keys(builds).flatMap((name) => KINDS.map((kind) => [name, kind]));
    if (i % 2) order.reverse();
    const round = {};
    for (const [name, kind] of order) round[`${name} ${kind}`] = await run(name, kind, SECONDS);
    rounds.push(round);
    loads.push(loadavg()[0]);
  }
  console.log(`${ROUNDS} rounds of ${SECONDS} s a load, 32 in flight over 16 connections (medians of the rounds)`);
  for (const name of Object.keys(builds)) {
    for (const kind of KINDS) {
      const m = (f) => median(rounds.map((r) => f(r[`${name} ${kind}`])));
      console.log(
        `  ${name.padEnd(7)} ${kind.padEnd(8)} ${m((x) => x.rps).toFixed(0)} req/s, p99 ${m((x) => x.p99).toFixed(2)} ms, server ${m((x) => x.serverUs).toFixed(1)} µs/request`,
      );
    }
    for (const kind of KINDS.slice(1)) {
      const ratios = rounds.map((r) => r[`${name} ${kind}`].p99 / r[`${name} bare`].p99);
      const over = median(rounds.map((r) => r[`${name} ${kind}`].serverUs - r[`${name} bare`].serverUs));
      console.log(
        `  ${name.padEnd(7)} ${kind} / bare: p99 ${median(ratios).toFixed(2)}× (rounds ${ratios.map((x) => x.toFixed(2)).join(", ")}); server CPU over bare ${over.toFixed(1)} µs`,
      );
    }
  }
  console.log(`  load average in the rounds ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`);
} finally {
  for (const c of Object.values(controllers)) await c.close();
  for (const db of dbs) await admin.unsafe(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`);
  await admin.end();
}
