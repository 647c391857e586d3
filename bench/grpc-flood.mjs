// One node key floods the agents' gRPC service: 1,000 GetBundle streams that never read (paused
// at once) and 3,000 Watch streams, over 250 connections. Meanwhile another tenant's operator
// lists its speakers over HTTP. Prints the controller's RSS (a separate process, read from
// /proc) and that tenant's GET /v1/speakers p50/p99, and what the flood's calls were answered.
// Asserts no time.
//
//   npm run build            # the bench runs packages/controller/dist/server.js
//   node bench/grpc-flood.mjs
//
// The speaker's bundle is made 8 MiB (its stored envelope replaced with filler bytes): the
// flood is about what the controller holds per stream, not about the bundle's content.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import postgres from "postgres";
import { bearerMetadata, grpc, loadAgentService } from "../packages/proto/dist/index.js";
import { procMemory } from "./controller-process.mjs";

const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_grpc_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"b".repeat(43)}`;
const BUNDLES = Number(process.env.BENCH_BUNDLES ?? 1000);
const WATCHES = Number(process.env.BENCH_WATCHES ?? 3000);
const CONNECTIONS = 250;
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const freePort = () =>
  new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;
const dataDir = mkdtempSync(join(tmpdir(), "rl-bench-grpc-"));
const [httpPort, grpcPort] = [await freePort(), await freePort()];
const child = spawn(
  process.execPath,
  [...(process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : []), "packages/controller/dist/server.js"],
  {
    env: {
      ...process.env,
      DATABASE_URL: dbUrl.toString(),
      APP_DATA_DIR: dataDir,
      BOOTSTRAP_API_KEY: KEY,
      HTTP_HOST: "127.0.0.1",
      HTTP_PORT: String(httpPort),
      GRPC_HOST: "127.0.0.1",
      GRPC_PORT: String(grpcPort),
      NODE_HTTPS_HOST: "127.0.0.1",
      NODE_HTTPS_PORT: "0",
      LOG_LEVEL: "error",
    },
    stdio: ["ignore", "ignore", "inherit"],
  },
);
const base = `http://127.0.0.1:${httpPort}`;
const rssMiB = () => procMemory(child.pid).rssMiB;
const api = async (key, method, path, body) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
};

const clients = [];
try {
  for (let i = 0; ; i++) {
    if ((await fetch(`${base}/health`).catch(() => null))?.ok) break;
    if (i > 300) throw new Error("the controller did not start");
    await sleep(100);
  }

  // Tenant A: one speaker with an applied revision, its bundle made 8 MiB.
  const community = await api(KEY, "POST", "/v1/communities", { community: "65000:100", title: "vpn" });
  const mod = await api(KEY, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id });
  await api(KEY, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
  const revisionId = (await api(KEY, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).result.revision_id;
  const speaker = await api(KEY, "POST", "/v1/speakers", { name: "edge-1", mode: "remote", router_id: "192.0.2.1", asn: 65010 });
  const nodeKey = (await api(speaker.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "r1", agent_version: "bench" })).api_key;
  await api(KEY, "POST", "/v1/apply", { speaker_ids: [speaker.id], timeout_seconds: 5 });
  const sql = postgres(dbUrl.toString(), { max: 1, onnotice: () => {} });
  for (let i = 0; ; i++) {
    const [row] = await sql`SELECT 1 FROM bundles WHERE speaker_id = ${speaker.id}`;
    if (row) break;
    if (i > 100) throw new Error("no bundle issued");
    await sleep(100);
  }
  await sql`UPDATE bundles SET envelope = ${Buffer.alloc(8 * 1024 * 1024, 7)} WHERE speaker_id = ${speaker.id}`;
  const [{ ca_pem: caPem }] = await sql`SELECT ca_pem FROM grpc_tls`;
  await sql.end();

  // Tenant B: an operator who lists speakers.
  const tenantB = await api(KEY, "POST", "/v1/tenants", { name: "other" });
  const keyB = tenantB.admin_key?.secret ?? tenantB.api_key ?? tenantB.admin_api_key ?? tenantB.key;
  for (let i = 0; i < 20; i++) await api(keyB, "POST", "/v1/speakers", { name: `b-${i}`, mode: "remote", router_id: "192.0.2.9", asn: 65020 });

  // Timed from a process of its own, so the flood's client work in this one does not count.
  const listSpeakers = (n) =>
    new Promise((resolve, reject) => {
      const script = `
        const times = [];
        for (let i = 0; i < ${n}; i++) {
          const t0 = performance.now();
          const res = await fetch(${JSON.stringify(`${base}/v1/speakers`)}, { headers: { authorization: ${JSON.stringify(`Bearer ${keyB}`)} } });
          await res.text();
          if (res.status !== 200) throw new Error("status " + res.status);
          times.push(performance.now() - t0);
        }
        process.stdout.write(JSON.stringify(times));`;
      const p = spawn(process.execPath, ["--input-type=module", "-e", script], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      p.stdout.on("data", (c) => {
        out += c;
      });
      p.once("exit", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`lister exited ${code}`))));
    });
  const quiet = await listSpeakers(100);
  const rssBefore = rssMiB();

  // The flood: one key, 250 connections (each channel its own), streams spread over them.
  const Service = loadAgentService().Client;
  const credentials = grpc.credentials.createSsl(Buffer.from(caPem));
  for (let i = 0; i < CONNECTIONS; i++) clients.push(new Service(`127.0.0.1:${grpcPort}`, credentials, { "grpc.use_local_subchannel_pool": 1 }));
  const outcomes = { GetBundle: new Map(), Watch: new Map() };
  const count = (rpc, code) => outcomes[rpc].set(code, (outcomes[rpc].get(code) ?? 0) + 1);
  const codeName = (code) => Object.keys(grpc.status).find((k) => grpc.status[k] === code) ?? String(code);
  const calls = [];
  for (let i = 0; i < BUNDLES; i++) {
    const call = clients[i % CONNECTIONS].getBundle({ speaker_id: speaker.id, revision_id: revisionId }, bearerMetadata(nodeKey));
    call.pause(); // never reads
    call.on("status", (s) => count("GetBundle", codeName(s.code)));
    call.on("error", () => {});
    calls.push(call);
  }
  for (let i = 0; i < WATCHES; i++) {
    const call = clients[(i + BUNDLES) % CONNECTIONS].watch(
      { speaker_id: "", agent_version: "bench", applied_revision_id: 0, applied_sequence: 0 },
      bearerMetadata(nodeKey),
    );
    let first = true;
    call.on("data", () => {
      if (first) count("Watch", "open (first event received)");
      first = false;
    });
    call.on("status", (s) => count("Watch", codeName(s.code)));
    call.on("error", () => {});
    calls.push(call);
  }

  const after0 = performance.now();
  let peak = rssBefore;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssMiB());
  }, 200);
  const flooded = await listSpeakers(200);
  const floodedMs = performance.now() - after0;
  const after = performance.now();
  // Past the 30 s idle deadline: paused GetBundle streams must have been cut.
  while (performance.now() - after < 35_000) await sleep(1000);
  clearInterval(sampler);
  const rssEnd = rssMiB();
  const ms = (x) => `${x.toFixed(1)} ms`;
  console.log(JSON.stringify({ bundles: BUNDLES, watches: WATCHES, connections: CONNECTIONS }));
  console.log(`tenant B GET /v1/speakers, quiet:   p50 ${ms(pct(quiet, 0.5))}  p99 ${ms(pct(quiet, 0.99))}  (n=${quiet.length})`);
  console.log(`tenant B GET /v1/speakers, flooded: p50 ${ms(pct(flooded, 0.5))}  p99 ${ms(pct(flooded, 0.99))}  (n=${flooded.length})`);
  console.log(`(200 requests took ${(floodedMs / 1000).toFixed(1)} s from the flood's start)`);
  console.log(`controller RSS: before ${rssBefore.toFixed(0)} MiB, peak ${peak.toFixed(0)} MiB, 35 s after ${rssEnd.toFixed(0)} MiB`);
  for (const [rpc, m] of Object.entries(outcomes)) console.log(`${rpc}: ${JSON.stringify(Object.fromEntries(m))}`);
  for (const c of calls) c.cancel();
} finally {
  for (const c of clients) c.close();
  child.kill("SIGTERM");
  await new Promise((r) => child.once("exit", r));
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
  rmSync(dataDir, { recursive: true, force: true });
}
