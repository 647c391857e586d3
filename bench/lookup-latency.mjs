// Per-request cost of the /v1 pipeline (auth, access, idempotency, metrics, headers) on a small
// tenant: GET /v1/lookup and GET /v1/auth/session against a bare Fastify route served by the same
// process, loaded by the same client. The big-data version is refresh-lookup.mjs; this one takes
// seconds, so the hooks can be profiled and compared build to build. Prints figures; asserts nothing.
import { performance } from "node:perf_hooks";
import Fastify from "fastify";
import postgres from "postgres";
import { Pool } from "undici";
import { loadConfig } from "../packages/controller/dist/config.js";
import { startController } from "../packages/controller/dist/controller.js";

const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_lat_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"b".repeat(43)}`;
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const SECONDS = Number(process.env.SECONDS ?? 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

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

async function load(base, pathFor, seconds) {
  const pool = new Pool(base, { connections: 16, pipelining: 1 });
  const lat = [];
  let n = 0;
  const end = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        const res = await pool.request({ method: "GET", path: pathFor(n++), headers: { authorization: `Bearer ${KEY}` } });
        await res.body.dump();
        if (res.statusCode !== 200) throw new Error(`status ${res.statusCode}`);
        lat.push(performance.now() - s);
      }
    }),
  );
  await pool.close();
  return { rps: lat.length / seconds, p50: pct(lat, 0.5), p99: pct(lat, 0.99) };
}

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
    `  ${name.padEnd(24)} ${med((r) => r[k].rps).toFixed(0)} req/s, p50 ${med((r) => r[k].p50).toFixed(2)} ms, p99 ${med((r) => r[k].p99).toFixed(2)} ms`;
  console.log(`per-request cost, ${ROUNDS} rounds of ${SECONDS} s, 32 in flight over 16 connections (medians)`);
  console.log(line("bare Fastify route", "b"));
  console.log(line("GET /v1/auth/session", "a"));
  console.log(line("GET /v1/lookup", "l"));
  console.log(`  lookup / bare            ${(med((r) => r.l.rps / r.b.rps) * 100).toFixed(0)}% of the rate, p99 ${med((r) => r.l.p99 / r.b.p99).toFixed(2)}×`);
  console.log(`  auth alone / bare        ${(med((r) => r.a.rps / r.b.rps) * 100).toFixed(0)}% of the rate, p99 ${med((r) => r.a.p99 / r.b.p99).toFixed(2)}×`);
  await bare.close();
} finally {
  await controller.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
