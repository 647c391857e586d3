import { loadavg } from "node:os";
import { pathToFileURL } from "node:url";
import Fastify from "fastify";
import postgres from "postgres";
import { closedLoopLoad } from "./http-load.mjs";

// BENCH_CONTROLLER_DIST: another build's packages/controller/dist (an earlier commit's, built
// aside), to compare in interleaved runs of this bench.
const dist = process.env.BENCH_CONTROLLER_DIST
  ? pathToFileURL(`${process.env.BENCH_CONTROLLER_DIST}/`).href
  : new URL("../packages/controller/dist/", import.meta.url).href;
const { loadConfig } = await import(`${dist}config.js`);
const { startController } = await import(`${dist}controller.js`);

const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_lat_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"b".repeat(43)}`;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SECONDS = Number(process.env.SECONDS ?? 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;
const controller = await startController(
  loadConfig({ DATABASE_URL: dbUrl.toString(), LOG_LEVEL: "silent", BOOTSTRAP_API_KEY: KEY, HTTP_HOST: "127.0.0.1", HTTP_PORT: "0" }),
  { logger: false },
);
const app = controller.app;
const call = async (method, url, payload) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${KEY}` }, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};

const load = (base, pathFor, seconds) => closedLoopLoad(base, pathFor, seconds, KEY);

try {
  const c = await call("POST", "/v1/communities", { community: "65000:1", title: "bench" });
  const m = await call("POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: c.id });
  const targets = [];
  for (let i = 0; i < 200; i++) {
    await call("POST", `/v1/modules/${m.id}/ip-range-entries`, { cidr: `${20 + (i % 50)}.${i}.0.0/16` });
    targets.push(`${20 + (i % 50)}.${i}.${i % 200}.${1 + (i % 250)}`);
  }
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  const bare = Fastify();
  bare.get("/bare", async () => ({ ok: true }));
  const bareAddress = await bare.listen({ host: "127.0.0.1", port: 0 });
  await load(address, (n) => `/v1/lookup?q=${targets[n % targets.length]}`, 1); // warm-up
  const rounds = [];
  for (let i = 0; i < ROUNDS; i++) {
    const b = await load(bareAddress, () => "/bare", SECONDS);
    const a = await load(address, () => "/v1/auth/session", SECONDS);
    const l = await load(address, (n) => `/v1/lookup?q=${targets[n % targets.length]}`, SECONDS);
    rounds.push({ b, a, l });
  }
  const med = (f) => median(rounds.map(f));
  const line = (name, k) =>
    `  ${name.padEnd(24)} ${med((r) => r[k].rps).toFixed(0)} req/s, p50 ${med((r) => r[k].p50).toFixed(2)} ms, p99 ${med((r) => r[k].p99).toFixed(2)} ms, ` +
    `CPU ${med((r) => r[k].cpuUs).toFixed(0)} µs/request`;
  console.log(`per-request cost, ${ROUNDS} rounds of ${SECONDS} s, 32 in flight over 16 connections (medians)`);
  console.log(line("bare Fastify route", "b"));
  console.log(line("GET /v1/auth/session", "a"));
  console.log(line("GET /v1/lookup", "l"));
  console.log(`  lookup / bare            ${(med((r) => r.l.rps / r.b.rps) * 100).toFixed(0)}% of the rate, p99 ${med((r) => r.l.p99 / r.b.p99).toFixed(2)}×`);
  console.log(`  auth alone / bare        ${(med((r) => r.a.rps / r.b.rps) * 100).toFixed(0)}% of the rate, p99 ${med((r) => r.a.p99 / r.b.p99).toFixed(2)}×`);
  // The CPU the server spends on a request beyond the bare route's (the client's share cancels out).
  console.log(
    `  server CPU over bare     auth ${med((r) => r.a.cpuUs - r.b.cpuUs).toFixed(0)} µs, lookup ${med((r) => r.l.cpuUs - r.b.cpuUs).toFixed(0)} µs a request`,
  );
  console.log(
    `  load average             ${loadavg()
      .map((x) => x.toFixed(2))
      .join(" ")}`,
  );
  await bare.close();
} finally {
  await controller.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
