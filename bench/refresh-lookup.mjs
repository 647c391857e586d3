// Full refresh of a tenant whose modules collect ~1,000,000 prefixes (file ASN source from
// @ip-location-db/asn + local CDN feeds), the diff of two big revisions, and lookup through
// HTTP against a bare Fastify route measured in the same run. Prints figures; asserts no time.

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import Fastify from "fastify";
import postgres from "postgres";
import { loadConfig } from "../packages/controller/dist/config.js";
import { startController } from "../packages/controller/dist/controller.js";
import { closedLoopLoad } from "./http-load.mjs";
import { publicSlash24s, xorshift } from "./random.mjs";
import { refreshToEnd } from "./refresh-job.mjs";

const require = createRequire(import.meta.url);
const asnDir = dirname(require.resolve("@ip-location-db/asn/package.json"));
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"b".repeat(43)}`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// Deterministic pseudo-random public prefixes (xorshift), far from the bogon ranges.
const rnd = xorshift(42);
const v4Prefixes = (n) => publicSlash24s(n, rnd);
function v6Prefixes(n) {
  const set = new Set();
  while (set.size < n) set.add(`2a0${Math.floor(rnd() * 10)}:${Math.floor(rnd() * 65536).toString(16)}:${Math.floor(rnd() * 65536).toString(16)}::/48`);
  return [...set];
}

// Top ASNs of the data set by row count.
const rows = readFileSync(join(asnDir, "asn-ipv4.csv"), "utf8").split("\n");
const counts = new Map();
for (const r of rows) {
  const asn = r.split(",")[2];
  if (asn) counts.set(asn, (counts.get(asn) ?? 0) + 1);
}
const topAsns = [...counts]
  .sort((a, b) => b[1] - a[1])
  .slice(0, 400)
  .map(([a]) => Number(a));

const feed = { text: "", json: "" };
const cdnV4 = v4Prefixes(750_000);
const cdnV6 = v6Prefixes(100_000);
const jsonV4 = v4Prefixes(100_000);
feed.text = `${[...cdnV4, ...cdnV6].join("\n")}\n`;
feed.json = JSON.stringify({ prefixes: jsonV4.map((ip_prefix) => ({ ip_prefix, service: "BENCH" })) });
const feedServer = createServer((req, res) => res.writeHead(200).end(req.url === "/big.txt" ? feed.text : feed.json));
await new Promise((r) => feedServer.listen(0, "127.0.0.1", r));
const feedBase = `http://127.0.0.1:${feedServer.address().port}`;

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;

let peakRss = 0;
const rssTimer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
const controller = await startController(
  loadConfig({
    DATABASE_URL: dbUrl.toString(),
    LOG_LEVEL: "silent",
    BOOTSTRAP_API_KEY: KEY,
    APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
    ASN_SOURCE: `file:${join(asnDir, "asn-ipv4.csv")},${join(asnDir, "asn-ipv6.csv")}`,
    HTTP_HOST: "127.0.0.1",
    HTTP_PORT: "0",
  }),
  { logger: false },
);
const app = controller.app;
const call = async (method, url, payload) => {
  const res = await app.inject({ method, url, headers: { authorization: `Bearer ${KEY}` }, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};

/** A refresh of every module, followed to its end. */
const refreshed = (payload) => refreshToEnd(call, "/v1/modules/refresh?wait=true", payload);

try {
  const c1 = await call("POST", "/v1/communities", { community: "65000:1", title: "asn" });
  const c2 = await call("POST", "/v1/communities", { community: "65000:2", title: "cdn" });
  const c3 = await call("POST", "/v1/communities", { community: "65000:3", title: "json" });
  const asnModule = await call("POST", "/v1/modules", { name: "top-asns", type: "AS_PREFIXES", community_id: c1.id });
  for (const asn of topAsns) await call("POST", `/v1/modules/${asnModule.id}/as-entries`, { asn });
  const cdnModule = await call("POST", "/v1/modules", { name: "cdn-text", type: "IP_RANGES", community_id: c2.id });
  await call("POST", `/v1/modules/${cdnModule.id}/cdn-sources`, { url: `${feedBase}/big.txt`, format: "text" });
  const jsonModule = await call("POST", "/v1/modules", { name: "cdn-json", type: "IP_RANGES", community_id: c3.id });
  await call("POST", `/v1/modules/${jsonModule.id}/cdn-sources`, { url: `${feedBase}/big.json`, format: "json", json_path: "prefixes[*].ip_prefix" });

  peakRss = process.memoryUsage().rss;
  const rssBefore = peakRss;
  const t0 = performance.now();
  const job = await refreshed();
  const refreshMs = performance.now() - t0;
  const collectedTotal = job.result.modules.reduce((s, m) => s + m.prefix_count, 0);
  const rev1 = await call("GET", `/v1/revisions/${job.result.revision_id}`);
  console.log("full refresh");
  console.log(`  collected prefixes        ${collectedTotal.toLocaleString()} (${job.result.modules.map((m) => m.prefix_count).join(" + ")})`);
  console.log(
    `  revision prefixes         ${(rev1.prefix_count_v4 + rev1.prefix_count_v6).toLocaleString()} (v4 ${rev1.prefix_count_v4}, v6 ${rev1.prefix_count_v6})`,
  );
  console.log(`  wall time                 ${(refreshMs / 1000).toFixed(2)} s  (target < 20 s)`);
  console.log(`  phases (ms)               ${JSON.stringify(job.result.timings_ms)}`);
  console.log(`  process RSS               before ${(rssBefore / 2 ** 20).toFixed(0)} MiB, peak ${(peakRss / 2 ** 20).toFixed(0)} MiB  (target < 1024 MiB)`);
  const [snap] = await controller.db
    .sql`SELECT count(*)::int AS rows, sum(cardinality(prefixes))::int AS prefixes, pg_total_relation_size('snapshots') AS bytes FROM snapshots`;
  console.log(
    `  snapshot rows             ${snap.rows} holding ${snap.prefixes.toLocaleString()} prefixes, ${(Number(snap.bytes) / 2 ** 20).toFixed(0)} MiB on disk`,
  );

  // Second revision: 10% of the text feed replaced.
  const replaced = v4Prefixes(75_000);
  feed.text = `${[...cdnV4.slice(75_000), ...replaced, ...cdnV6].join("\n")}\n`;
  const t1 = performance.now();
  const job2 = await refreshed({ force: true });
  console.log(`  second refresh (10% changed) ${((performance.now() - t1) / 1000).toFixed(2)} s, phases (ms) ${JSON.stringify(job2.result.timings_ms)}`);
  const diffTimes = [];
  let diff;
  for (let i = 0; i < 3; i++) {
    const t2 = performance.now();
    diff = await call("GET", `/v1/revisions/${job.result.revision_id}/diff/${job2.result.revision_id}?limit=10`);
    diffTimes.push(performance.now() - t2);
  }
  console.log("diff of the two revisions");
  console.log(`  added ${diff.added_count}, removed ${diff.removed_count}, changed ${diff.changed_count}`);
  console.log(`  time, first (decode + diff) ${diffTimes[0].toFixed(0)} ms, median of 3 ${median(diffTimes).toFixed(0)} ms`);

  // Lookup through HTTP vs a bare Fastify route on the same machine, same client.
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  const bare = Fastify();
  bare.get("/bare", async () => ({ ok: true }));
  const bareAddress = await bare.listen({ host: "127.0.0.1", port: 0 });
  const targets = cdnV4.slice(0, 5000).map((p) => p.replace("0/24", String(1 + Math.floor(rnd() * 250))));
  await call("GET", `/v1/lookup?q=${targets[0]}`); // builds the snapshot index once
  const load = (base, pathFor, seconds) => closedLoopLoad(base, pathFor, seconds, KEY);
  // /v1/auth/session does nothing but authenticate: the floor that any /v1 route shares.
  const rounds = [];
  for (let i = 0; i < 3; i++) {
    const b = await load(bareAddress, () => "/bare", 3);
    const a = await load(address, () => "/v1/auth/session", 3);
    const l = await load(address, (n) => `/v1/lookup?q=${targets[n % targets.length]}`, 3);
    rounds.push({ b, a, l });
  }
  const med = (f) => median(rounds.map(f));
  console.log(
    `lookup over ${(rev1.prefix_count_v4 + rev1.prefix_count_v6).toLocaleString()} revision and ${collectedTotal.toLocaleString()} snapshot prefixes (3 rounds of 3 s, 32 in flight)`,
  );
  console.log(
    `  bare Fastify route        ${med((r) => r.b.rps).toFixed(0)} req/s, p50 ${med((r) => r.b.p50).toFixed(2)} ms, p99 ${med((r) => r.b.p99).toFixed(2)} ms`,
  );
  console.log(
    `  GET /v1/auth/session      ${med((r) => r.a.rps).toFixed(0)} req/s, p50 ${med((r) => r.a.p50).toFixed(2)} ms, p99 ${med((r) => r.a.p99).toFixed(2)} ms  (authentication alone)`,
  );
  console.log(
    `  GET /v1/lookup            ${med((r) => r.l.rps).toFixed(0)} req/s, p50 ${med((r) => r.l.p50).toFixed(2)} ms, p99 ${med((r) => r.l.p99).toFixed(2)} ms`,
  );
  console.log(
    `  ratio lookup / bare       ${(med((r) => r.l.rps / r.b.rps) * 100).toFixed(0)}%  (target ≥ 40%); lookup / auth alone ${(med((r) => r.l.rps / r.a.rps) * 100).toFixed(0)}%`,
  );
  console.log(`  p99 lookup / bare         ${med((r) => r.l.p99 / r.b.p99).toFixed(2)}×  (target ≤ 1.2×)`);
  // The figures before lookups read their own writes (the same bench, an earlier build), to compare.
  const before = { lookupRps: 6811, bareRps: 14931, lookupP99: 17.1, bareP99: 11.8 };
  console.log(
    "  before read-your-writes   " +
      `${before.lookupRps.toLocaleString()} vs ${before.bareRps.toLocaleString()} req/s = ${Math.round((before.lookupRps / before.bareRps) * 100)}%; ` +
      `p99 ${before.lookupP99} vs ${before.bareP99} ms = ${(before.lookupP99 / before.bareP99).toFixed(2)}×`,
  );
  console.log(
    "  now                       " +
      `${med((r) => r.l.rps).toFixed(0)} vs ${med((r) => r.b.rps).toFixed(0)} req/s = ${(med((r) => r.l.rps / r.b.rps) * 100).toFixed(0)}%; ` +
      `p99 ${med((r) => r.l.p99).toFixed(1)} vs ${med((r) => r.b.p99).toFixed(1)} ms = ${med((r) => r.l.p99 / r.b.p99).toFixed(2)}×`,
  );
  await bare.close();
} finally {
  clearInterval(rssTimer);
  await controller.close();
  feedServer.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
