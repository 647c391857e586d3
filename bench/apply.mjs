// One apply of a big revision through every real part, on loopback: the controller (built, with
// PostgreSQL, NATS when it answers, HTTP and gRPC), an `rl-agent run` process (built), BIRD 2
// in full mode and GoBGP as the peer. Measures the time from POST /v1/apply until GoBGP holds
// every prefix, and splits it into sign, transfer, verify, render, `bird -p`, configure and BGP
// convergence, from the outside, from the agent's log lines and by running the agent's own
// steps on the same bundle. Prints figures; asserts no time.
//
//   npx turbo run build && node bench/apply.mjs
//   BENCH_APPLY_PREFIXES=100000 node bench/apply.mjs      # a smaller run
import { execFile, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { connect as netConnect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { promisify } from "node:util";
import { bearerMetadata, eventSubjects, grpc, internalSubjects, loadAgentService } from "@rlc/proto";
import { renderBirdConfig } from "@rlc/shared/bird";
import { buildBundlePayload, signBundle, verifyBundle } from "@rlc/shared/bundle";
import postgres from "postgres";
import { loadConfig } from "../packages/controller/dist/config.js";
import { startController } from "../packages/controller/dist/controller.js";
import { openPieces } from "../packages/controller/dist/lib/sealed-envelope.js";
import { freePort, startBird, startGobgp, stopProcess } from "../test/helpers/lab-daemons.mjs";

const root = join(import.meta.dirname, "..");
const run = promisify(execFile);
const N = Number(process.env.BENCH_APPLY_PREFIXES || 500_000);
const V6_SHARE = 0.1;
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const KEY = `rlk_BENCHKEY_${"a".repeat(43)}`;
const dbName = `rlc_bench_apply_${process.pid}`;
const s = (ms) => `${(ms / 1000).toFixed(2)} s`.padStart(9);

const missing = ["bird", "gobgpd", "gobgp"].filter((bin) => spawnSync("sh", ["-c", `command -v ${bin}`]).status !== 0);
if (missing.length) {
  console.log(`skipped: ${missing.join(", ")} not on PATH`);
  process.exit(0);
}

// Deterministic public-looking prefixes (xorshift), far from the bogon ranges.
let seed = 7;
const rnd = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 4294967296;
};
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
  feeds = big;
  const tRefresh = performance.now();
  const revision = await refresh();
  const refreshMs = performance.now() - tRefresh;
  const want = { v4: revision.prefix_count_v4, v6: revision.prefix_count_v6 };

  // ---- the apply, timed from the outside ----
  const tenantId = (await controller.deps.sql`SELECT tenant_id FROM speakers WHERE id = ${speaker.id}`)[0].tenant_id;
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
  const t0 = performance.now();
  const accepted = await call("POST", "/v1/apply", { timeout_seconds: 600 });
  const baseline = { v4: await ribCount("ipv4"), v6: await ribCount("ipv6") };
  let counts = { v4: 0, v6: 0 };
  let firstRoute = null;
  let allRoutes = null;
  while (performance.now() - t0 < 900_000) {
    counts = { v4: await ribCount("ipv4"), v6: await ribCount("ipv6") };
    if (firstRoute === null && counts.v4 + counts.v6 > baseline.v4 + baseline.v6) firstRoute = performance.now();
    if (counts.v4 >= want.v4 && counts.v6 >= want.v6) {
      allRoutes = performance.now();
      break;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  const job = await untilJob(accepted.job_id);
  for (const u of unsubscribe) u();
  if (job.status !== "succeeded") throw new Error(`apply: ${JSON.stringify(job.error)}\n${agentLog}`);
  if (!allRoutes) throw new Error(`GoBGP holds ${JSON.stringify(counts)} of ${JSON.stringify(want)}`);
  const logAt = (msg) => {
    const line = agentLog.split("\n").find((l) => l.includes(`"msg":"${msg}"`) && l.includes(`"revision_id":${revision.revision_id}`));
    if (!line) return null;
    const { time } = JSON.parse(line); // pino: epoch milliseconds
    return (typeof time === "number" ? time : Date.parse(time)) - epoch;
  };
  const fetching = logAt("sync: fetching bundle");
  const probation = logAt("sync: BIRD runs the new config on probation");
  const applied = logAt("sync: applied");

  // ---- the agent's steps again, one by one, on the same bundle ----
  const [bundleRow] = await controller.deps
    .sql`SELECT envelope, envelope_sealed, envelope_chunk FROM bundles WHERE speaker_id = ${speaker.id} AND revision_id = ${revision.revision_id}`;
  // Stored bundles are sealed at rest; the agent receives the opened bytes.
  const storedEnvelope = bundleRow.envelope_sealed
    ? await openPieces(controller.deps.services.secretBox, bundleRow.envelope, bundleRow.envelope_chunk)
    : bundleRow.envelope;
  const [tlsRow] = controller.grpc.tls ? await controller.deps.sql`SELECT ca_pem FROM grpc_tls` : [];
  const node = JSON.parse(readFileSync(join(dir, "state", "node.json"), "utf8"));
  const { Client } = loadAgentService();
  const credentials = tlsRow ? grpc.credentials.createSsl(Buffer.from(tlsRow.ca_pem)) : grpc.credentials.createInsecure();
  const client = new Client(controller.grpc.address, credentials, { "grpc.max_receive_message_length": 8 * 1024 * 1024 });
  const tTransfer = performance.now();
  const bytes = await new Promise((resolve, reject) => {
    const parts = [];
    const stream = client.getBundle({ speaker_id: speaker.id, revision_id: revision.revision_id }, bearerMetadata(node.api_key));
    stream.on("data", (c) => parts.push(c.data));
    stream.on("error", reject);
    stream.on("end", () => resolve(Buffer.concat(parts)));
  });
  const transferMs = performance.now() - tTransfer;
  client.close();
  if (!bytes.equals(storedEnvelope)) throw new Error("GetBundle bytes differ from the stored bundle");
  const keys = (await call("GET", "/v1/nodes/signing-keys")).keys;
  const tVerify = performance.now();
  const { payload } = await verifyBundle(bytes, keys, { speakerId: speaker.id, tenantId, lastSequence: null, now: new Date() });
  const verifyMs = performance.now() - tVerify;
  const key = await controller.deps.services.signing.activeKey(controller.db.sql, tenantId);
  const tSign = performance.now();
  const content = { ...payload };
  for (const f of ["sequence", "issued_at", "expires_at", "digest"]) delete content[f];
  await signBundle(buildBundlePayload(content, { sequence: payload.sequence + 1, issuedAt: new Date() }), key.secretKey, key.keyId);
  const signMs = performance.now() - tSign;
  const tRender = performance.now();
  const rendered = renderBirdConfig(payload, { mode: "full", mainName: "bird.conf" });
  const renderMs = performance.now() - tRender;
  const check = join(dir, "check");
  mkdirSync(check);
  for (const [name, text] of Object.entries(rendered.files)) writeFileSync(join(check, name), text);
  const tParse = performance.now();
  const parsed = spawnSync("bird", ["-p", "-c", join(check, rendered.entry)], { encoding: "utf8" });
  const parseMs = performance.now() - tParse;
  if (parsed.status !== 0) throw new Error(`bird -p: ${parsed.stderr}`);

  const total = allRoutes - t0;
  const configureMs = probation !== null && fetching !== null ? probation - fetching - transferMs - verifyMs - renderMs - parseMs : null;
  const line = (label, ms, note = "") => console.log(`  ${label.padEnd(50)}${ms === null ? "        ?" : s(ms)}${note ? `  ${note}` : ""}`);
  console.log(
    `apply of ${(want.v4 + want.v6).toLocaleString()} prefixes (v4 ${want.v4.toLocaleString()}, v6 ${want.v6.toLocaleString()}; asked for N = ${N.toLocaleString()}), bundle ${(bytes.length / 2 ** 20).toFixed(1)} MiB, rendered ${(Object.values(rendered.files).reduce((n, t) => n + t.length, 0) / 2 ** 20).toFixed(1)} MiB`,
  );
  console.log(
    `  wake-ups: gRPC Watch${natsUp ? " + NATS" : " (NATS not reachable)"}; BIRD ${/BIRD version (\S+)/.exec(spawnSync("bird", ["--version"], { encoding: "utf8" }).stderr)?.[1] ?? "?"}, GoBGP as the peer (session up before the timed apply); refresh before it took ${s(refreshMs).trim()}`,
  );
  console.log("from POST /v1/apply");
  line("bundle issued and agent notified", (marks.notified ?? NaN) - t0, "job claim, desired revision, payload, sign, store");
  line("agent starts fetching (agent log)", fetching === null ? null : fetching - t0);
  line("BIRD runs it on probation (agent log)", probation === null ? null : probation - t0);
  line("first new route at GoBGP", firstRoute - t0);
  line("agent confirmed (agent log)", applied === null ? null : applied - t0);
  line("controller has the applied report", (marks.reported ?? NaN) - t0);
  line("GoBGP holds every prefix", total);
  line("apply job finished", Date.parse(job.finished_at) - epoch - t0);
  console.log("split (each step alone on the same bundle, or the agent's log between steps)");
  line("sign (canonical JSON + Ed25519)", signMs);
  line("transfer (GetBundle over gRPC, 1 MiB chunks)", transferMs);
  line("verify (signature, digest)", verifyMs);
  line("render (bundle → BIRD config text)", renderMs);
  line("bird -p (parse only)", parseMs);
  line("configure (fetch → probation, minus the above)", configureMs, "file swap + configure timeout + BIRD answering again");
  line(
    "probation window + confirm + record (log)",
    applied !== null && probation !== null ? applied - probation : null,
    "BIRD.confirm_after_seconds (default 10 s) and the checks after it",
  );
  line("BGP convergence (probation → GoBGP has all)", probation === null ? null : allRoutes - probation);
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
