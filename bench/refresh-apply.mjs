// One CDN module's feed changes by 1% in a tenant with ~1.2M collected prefixes over ~20 modules
// (an AS_PREFIXES module from the file ASN source, @ip-location-db/asn, and 19 CDN text feeds
// served locally): POST refresh of that module → revision, incremental (the tenant's last build
// reused) beside a full rebuild of the same change in the same run; the full refresh of the whole
// tenant with the controller's peak RSS; the diff of the two revisions; lookup p99 against a bare
// Fastify route. The controller runs in a process of its own (controller-process.mjs). Prints
// figures beside the targets of issue 30; asserts no time. The machine is shared: one run is
// noisy, compare ratios within it.
//
//   npx turbo run build && node bench/refresh-apply.mjs
//   BENCH_CDN_MODULES=19 BENCH_CDN_PREFIXES=55000 node bench/refresh-apply.mjs
//   BENCH_BUILD_ONLY=1 (the in-process part alone), BENCH_SKIP_BUILD=1 (the controller part alone),
//   BENCH_LOOKUP_ROUNDS=10 BENCH_LOOKUP_SECONDS=3 (the lookup's interleaved rounds), BENCH_CONTROLLER_ROUNDS=3
//   (incremental and full refreshes of the change, interleaved)

import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { loadavg } from "node:os";
import { dirname, join } from "node:path";
import { performance } from "node:perf_hooks";
import postgres from "postgres";
import { forkController } from "./controller-process.mjs";
import { closedLoopLoad } from "./http-load.mjs";
import { publicSlash24s, xorshift } from "./random.mjs";
import { refreshToEnd } from "./refresh-job.mjs";

const require = createRequire(import.meta.url);
const asnDir = dirname(require.resolve("@ip-location-db/asn/package.json"));
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"r".repeat(43)}`;
const CDN_MODULES = Number(process.env.BENCH_CDN_MODULES || 19);
const CDN_PREFIXES = Number(process.env.BENCH_CDN_PREFIXES || 55_000);
const ASNS = Number(process.env.BENCH_ASNS || 400);
const ROUNDS = Number(process.env.BENCH_ROUNDS || 5);
const CONTROLLER_ROUNDS = Number(process.env.BENCH_CONTROLLER_ROUNDS || 3);
/** Between a round's full refresh and the next round's incremental one (BENCH_ROUND_PAUSE_MS; none by default). */
const ROUND_PAUSE_MS = Number(process.env.BENCH_ROUND_PAUSE_MS || 0);
const LOOKUP_ROUNDS = Number(process.env.BENCH_LOOKUP_ROUNDS || 10);
const LOOKUP_SECONDS = Number(process.env.BENCH_LOOKUP_SECONDS || 3);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;

// Deterministic feeds: module k gets its own /24s (IPv4) and /48s (IPv6, one in ten). Only their
// texts are kept (the lists are made again when needed).
const originals = [];
{
  const all = publicSlash24s(CDN_MODULES * CDN_PREFIXES, xorshift(7));
  for (let k = 0; k < CDN_MODULES; k++) {
    const v4 = all.slice(k * CDN_PREFIXES, (k + 1) * CDN_PREFIXES);
    const v6 = Array.from({ length: Math.floor(CDN_PREFIXES / 10) }, (_, i) => `2a0${k % 10}:${k.toString(16)}:${i.toString(16)}::/48`);
    originals.push(`${[...v4, ...v6].join("\n")}\n`);
  }
}
const texts = [...originals];
const feedLines = (k) => originals[k].trimEnd().split("\n");
// 1% of a feed's prefixes replaced by /24s of no feed (100-179.x: the feeds draw 11-99.x).
const changedCount = Math.floor(CDN_PREFIXES / 100);
const fresh = publicSlash24s(changedCount, xorshift(99))
  .map((p) => p.replace(/^(\d+)\./, (_, a) => `${(Number(a) % 80) + 100}.`))
  .join("\n")
  .split("\n");
// The build alone, in this process (no HTTP, no database): a full build of every module against
// the rebuild of one module's 1% change from the last build, and the diff the API answers.
// BENCH_SKIP_BUILD=1 leaves it out.
if (!process.env.BENCH_SKIP_BUILD) {
  const { buildWithState, rebuildRevision } = await import("../packages/controller/dist/services/revisions/revision-incremental.js");
  const { encodeContent } = await import("../packages/controller/dist/services/revisions/revision-encoding.js");
  const { taggedPrefixes } = await import("../packages/controller/dist/services/revisions/revision-content.js");
  const { diffTagged, rangeToCidrs } = await import("@rlc/shared/prefix");
  // The top ASNs' address space (the same table the file ASN source reads), as CIDRs.
  const rowsOf = (file) =>
    readFileSync(join(asnDir, file), "utf8")
      .split("\n")
      .map((r) => r.split(","));
  const rows = [...rowsOf("asn-ipv4.csv"), ...rowsOf("asn-ipv6.csv")].filter((r) => r[2]);
  const perAsn = new Map();
  for (const r of rows) perAsn.set(r[2], (perAsn.get(r[2]) ?? 0) + 1);
  const top = new Set(
    [...perAsn]
      .sort((a, b) => b[1] - a[1])
      .slice(0, ASNS)
      .map(([a]) => a),
  );
  // Read back from text, as a source's prefixes are (flat strings: built ones are V8 cons strings,
  // which parse slower).
  const asnPrefixes = rows
    .filter((r) => top.has(r[2]))
    .flatMap((r) => rangeToCidrs(r[0], r[1]))
    .join("\n")
    .split("\n");
  const input = [
    { module_id: "00000000-0000-0000-0000-0000000000aa", name: "top-asns", community: "65000:1", prefixes: asnPrefixes },
    ...texts.map((text, k) => ({
      module_id: `00000000-0000-0000-0000-0000000001${String(k).padStart(2, "0")}`,
      name: `cdn-${k}`,
      community: `65000:${100 + (k % 5)}`,
      prefixes: text.trimEnd().split("\n"),
    })),
  ];
  const total = input.reduce((n, m) => n + m.prefixes.length, 0);
  let t = performance.now();
  const first = buildWithState(input, {});
  const buildMs = performance.now() - t;
  t = performance.now();
  encodeContent(first.built.content);
  const encodeMs = performance.now() - t;
  const n = changedCount;
  const changed = input.map((m, i) => (i === 4 ? { ...m, prefixes: [...fresh, ...m.prefixes.slice(n)] } : m));
  // Rounds of the rebuild (each from the first build's state, as a refresh after it) and of the
  // full build of the same change, interleaved so that load from other processes falls on both.
  // (No forced gc() between them: see bench/README.md.)
  const cpuMs = (c) => (c.user + c.system) / 1000;
  const rounds = [];
  let inc;
  let full;
  // A pause before each timed call lets the collector's threads finish the garbage of the call
  // before (the process's CPU time counts them), for both alike.
  const settle = () => new Promise((r) => setTimeout(r, 300));
  for (let r = 0; r < ROUNDS; r++) {
    await settle();
    t = performance.now();
    let cpu = process.cpuUsage();
    inc = rebuildRevision(first.state, changed, {}, new Set([input[4].module_id]));
    const incMs = performance.now() - t;
    const incCpu = cpuMs(process.cpuUsage(cpu));
    await settle();
    t = performance.now();
    cpu = process.cpuUsage();
    // What the controller's full path runs: the build and the state the next rebuild starts from.
    full = buildWithState(changed, {}).built;
    rounds.push({ incMs, incCpu, fullMs: performance.now() - t, fullCpu: cpuMs(process.cpuUsage(cpu)), phases: inc.phases });
  }
  const same = encodeContent(inc.built.content).equals(encodeContent(full.content)) && inc.built.digest === full.digest;
  const med = (f) => median(rounds.map(f));
  t = performance.now();
  const d = diffTagged(taggedPrefixes(first.built.content), taggedPrefixes(inc.built.content));
  const diffMs = performance.now() - t;
  console.log(
    `build alone (in process): ${input.length} modules, ${total.toLocaleString()} collected prefixes, ${(first.built.content.v4.length + first.built.content.v6.length).toLocaleString()} announced`,
  );
  console.log(`  full build ${s(buildMs)}, its encoding ${s(encodeMs)}`);
  console.log(
    `  one module's 1% change (${n} of ${input[4].prefixes.length} prefixes), medians of ${ROUNDS} interleaved rounds (the first is as cold as a refresh after a full build):`,
  );
  console.log(
    `    rebuild ${s(med((r) => r.incMs))} vs full build ${s(med((r) => r.fullMs))} = ${med((r) => r.fullMs / r.incMs).toFixed(1)}× (wall); same bytes and digest: ${same ? "yes" : "NO"}`,
  );
  console.log(
    `    CPU time of this process: rebuild ${s(med((r) => r.incCpu))} vs full build ${s(med((r) => r.fullCpu))} = ${med((r) => r.fullCpu / r.incCpu).toFixed(1)}× (less sensitive to a loaded machine); rounds (ms) ${rounds.map((r) => `${r.incCpu.toFixed(0)}/${r.fullCpu.toFixed(0)}`).join(", ")}`,
  );
  console.log(
    `    rebuild steps (ms, medians): ${Object.keys(inc.phases)
      .map((k) => `${k} ${med((r) => r.phases[k]).toFixed(0)}`)
      .join(", ")}; blocks rebuilt ${inc.blocks.v4} IPv4 + ${inc.blocks.v6} IPv6, ranges changed ${inc.built.change.v4.length} + ${inc.built.change.v6.length}`,
  );
  console.log(`  diff of the two contents (${d.added.length} added, ${d.removed.length} removed, ${d.changed.length} changed) ${(diffMs).toFixed(0)} ms`);
}
if (process.env.BENCH_BUILD_ONLY) process.exit(0);

const feedServer = createServer((req, res) => res.writeHead(200).end(texts[Number(req.url.slice(1))] ?? ""));
await new Promise((r) => feedServer.listen(0, "127.0.0.1", r));
const feedBase = `http://127.0.0.1:${feedServer.address().port}`;

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;

// The controller in a process of its own: its RSS is its own, not the bench's feeds' and the
// in-process part's.
const controller = await forkController({
  DATABASE_URL: dbUrl.toString(),
  LOG_LEVEL: process.env.LOG_LEVEL || "silent",
  BOOTSTRAP_API_KEY: KEY,
  APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
  ASN_SOURCE: `file:${join(asnDir, "asn-ipv4.csv")},${join(asnDir, "asn-ipv6.csv")}`,
});
const sql = postgres(dbUrl.toString(), { max: 1, onnotice: () => {} });
const call = async (method, url, payload) => {
  const res = await fetch(`${controller.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(payload ? { "content-type": "application/json" } : {}) },
    body: payload ? JSON.stringify(payload) : undefined,
  });
  const text = await res.text();
  if (res.status >= 400) throw new Error(`${method} ${url}: ${res.status} ${text}`);
  return JSON.parse(text);
};
const refreshed = (url, payload) => refreshToEnd(call, `${url}?wait=true`, payload);
/** Replaces 1% of feed k's IPv4 prefixes with fresh ones (or puts the original back). */
const changeFeed = (k, back) => {
  const list = back ? feedLines(k) : [...fresh, ...feedLines(k).slice(changedCount)];
  texts[k] = `${list.join("\n")}\n`;
};
const mib = (x) => `${x.toFixed(0)} MiB`;

try {
  const asnCommunity = await call("POST", "/v1/communities", { community: "65000:1", title: "asn" });
  const asnModule = await call("POST", "/v1/modules", { name: "top-asns", type: "AS_PREFIXES", community_id: asnCommunity.id });
  const top = readFileSync(join(asnDir, "asn-ipv4.csv"), "utf8").split("\n");
  const counts = new Map();
  for (const r of top) {
    const asn = r.split(",")[2];
    if (asn) counts.set(asn, (counts.get(asn) ?? 0) + 1);
  }
  for (const [asn] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, ASNS))
    await call("POST", `/v1/modules/${asnModule.id}/as-entries`, { asn: Number(asn) });
  const cdn = [];
  for (let k = 0; k < CDN_MODULES; k++) {
    const c = await call("POST", "/v1/communities", { community: `65000:${100 + (k % 5)}`, title: `cdn ${k % 5}` }).catch(() => null);
    const community = c ?? (await call("GET", "/v1/communities?limit=100")).items.find((x) => x.community === `65000:${100 + (k % 5)}`);
    const m = await call("POST", "/v1/modules", { name: `cdn-${k}`, type: "IP_RANGES", community_id: community.id });
    await call("POST", `/v1/modules/${m.id}/cdn-sources`, { url: `${feedBase}/${k}`, format: "text" });
    cdn.push(m.id);
  }

  controller.resetPeak();
  const before = controller.memory().rssMiB;
  let t = performance.now();
  const first = await refreshed("/v1/modules/refresh");
  const fullMs = performance.now() - t;
  const mem = controller.memory();
  const heap = await controller.usage();
  const collected = first.result.modules.reduce((n, m) => n + m.prefix_count, 0);
  const rev1 = await call("GET", `/v1/revisions/${first.result.revision_id}`);
  console.log(
    `tenant: ${first.result.modules.length} modules, ${collected.toLocaleString()} collected prefixes, revision ${(rev1.prefix_count_v4 + rev1.prefix_count_v6).toLocaleString()} prefixes`,
  );
  console.log(`full refresh of every module   ${s(fullMs)}  (target ≤ 8 s), phases (ms) ${JSON.stringify(first.result.timings_ms)}`);
  console.log(
    `  the controller's peak RSS    ${mib(mem.peakMiB)} (VmHWM; VmRSS sampled every 50 ms: ${mib(mem.sampledPeakMiB)}), before ${mib(before)}, after ${mib(mem.rssMiB)}  (target ≤ 600 MiB; its own process)`,
  );
  console.log(
    `  after it: heap used ${mib(heap.heapUsed)} of ${mib(heap.heapTotal)}, external ${mib(heap.external)} (array buffers ${mib(heap.arrayBuffers)})`,
  );

  // One CDN module's feed, 1% changed: incremental; the same change back, built in full: snapshots
  // written "elsewhere" since the last build (the generation moved) make the controller read and
  // build every module, as REFRESH_MODE=full does. BENCH_CONTROLLER_ROUNDS rounds of the two
  // (the first as cold as a refresh after the tenant's first one; the later ones as an
  // operator's loop of refreshes finds the controller), medians and the first printed.
  const k = 3;
  const pairs = [];
  let inc;
  let full;
  // The controller's CPU during each refresh, from /proc (ns): its main thread's, and all its
  // threads' (the collector's helpers, the thread pool). Less moved than the wall time by what
  // else the two cores run (PostgreSQL storing the snapshots, other processes).
  const threadNs = (task) => Number(readFileSync(`/proc/${controller.pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
  const cpuNow = () => {
    let all = 0;
    for (const task of readdirSync(`/proc/${controller.pid}/task`)) {
      try {
        all += threadNs(task);
      } catch {
        // a thread that ended meanwhile
      }
    }
    return { main: threadNs(controller.pid), all };
  };
  const cpuSince = (a) => {
    const b = cpuNow();
    return { main: (b.main - a.main) / 1e6, all: (b.all - a.all) / 1e6 };
  };
  for (let r = 0; r < CONTROLLER_ROUNDS; r++) {
    changeFeed(k, false);
    if (r > 0 && ROUND_PAUSE_MS) await new Promise((resolve) => setTimeout(resolve, ROUND_PAUSE_MS));
    t = performance.now();
    let cpu = cpuNow();
    const i = await refreshed(`/v1/modules/${cdn[k]}/refresh`);
    const incMs = performance.now() - t;
    const incCpu = cpuSince(cpu);
    changeFeed(k, true);
    await sql`UPDATE tenant_generations SET snapshot_generation = snapshot_generation + 1`;
    t = performance.now();
    cpu = cpuNow();
    const f = await refreshed(`/v1/modules/${cdn[k]}/refresh`);
    pairs.push({ incMs, fullMs: performance.now() - t, incCpu, fullCpu: cpuSince(cpu), inc: i, full: f });
    inc ??= i;
    full = f;
  }
  const rev3 = await call("GET", `/v1/revisions/${full.result.revision_id}`);
  const phases = (x) => JSON.stringify(x.result.timings_ms);
  console.log(
    `one module, 1% of its feed changed (${Math.floor(CDN_PREFIXES / 100)} prefixes): POST refresh → revision, ${CONTROLLER_ROUNDS} rounds of an incremental refresh and a full one of the change put back`,
  );
  console.log(
    `  incremental                  median ${s(median(pairs.map((p) => p.incMs)))}, first ${s(pairs[0].incMs)}  (${inc.result.build}; target ≤ 1.0 s); phases (ms) ${pairs.map((p) => phases(p.inc)).join(" ")}`,
  );
  console.log(
    `  full, the same change back   median ${s(median(pairs.map((p) => p.fullMs)))}, first ${s(pairs[0].fullMs)}  (${full.result.build}); phases (ms) ${pairs.map((p) => phases(p.full)).join(" ")}`,
  );
  console.log(
    `  full / incremental           median of the rounds' ratios ${median(pairs.map((p) => p.fullMs / p.incMs)).toFixed(1)}×  (target ≥ 8×; rounds ${pairs.map((p) => (p.fullMs / p.incMs).toFixed(1)).join(", ")})`,
  );
  for (const which of ["main", "all"]) {
    const incs = pairs.map((p) => p.incCpu[which]);
    const fulls = pairs.map((p) => p.fullCpu[which]);
    console.log(
      `  the controller's CPU, ${which === "main" ? "main thread" : "all threads"}: incremental median ${median(incs).toFixed(0)} ms, full ${median(fulls).toFixed(0)} ms; median of the rounds' ratios ${median(pairs.map((p) => p.fullCpu[which] / p.incCpu[which])).toFixed(1)}× (rounds ${pairs.map((p) => (p.fullCpu[which] / p.incCpu[which]).toFixed(1)).join(", ")})`,
    );
  }
  console.log(`  the change put back gives the first revision again: ${rev3.digest === rev1.digest ? "yes" : "NO"} (digest)`);
  console.log(`  the controller's peak RSS over all of the above: ${mib(controller.memory().peakMiB)}`);

  // The incremental loop alone, as an operator's refreshes run it: the change and its reverse in
  // turn, every refresh incremental. Above, each incremental refresh comes after a full one and
  // pays for part of it (the collector's concurrent marking of the heap the full build grew, on
  // the same two cores); here none does. Beside the full path's median from the rounds above.
  const loop = [];
  for (let r = 0; r < 2 * CONTROLLER_ROUNDS; r++) {
    changeFeed(k, r % 2 === 1);
    t = performance.now();
    const cpu = cpuNow();
    const j = await refreshed(`/v1/modules/${cdn[k]}/refresh`);
    if (j.result.build !== "incremental") throw new Error(`the loop's refresh ${r} was ${j.result.build}`);
    loop.push({ ms: performance.now() - t, cpu: cpuSince(cpu), phases: j.result.timings_ms });
  }
  const fullMedianMs = median(pairs.map((p) => p.fullMs));
  const fullMain = median(pairs.map((p) => p.fullCpu.main));
  const loopMs = median(loop.map((x) => x.ms));
  const loopMain = median(loop.map((x) => x.cpu.main));
  console.log(
    `  the incremental loop alone (${loop.length} refreshes in a row, the change and its reverse): median ${s(loopMs)} (rounds ${loop.map((x) => x.ms.toFixed(0)).join(", ")} ms); the full path's median above / this: ${(fullMedianMs / loopMs).toFixed(1)}×; main-thread CPU ${loopMain.toFixed(0)} ms, ${(fullMain / loopMain).toFixed(1)}×; all threads ${median(loop.map((x) => x.cpu.all)).toFixed(0)} ms`,
  );
  const slowest = loop.reduce((a, b) => (b.ms > a.ms ? b : a));
  console.log(`    the loop's slowest refresh: ${slowest.ms.toFixed(0)} ms, phases (ms) ${JSON.stringify(slowest.phases)}`);

  // The first revision against the first incremental one (stored as a change against it), and
  // against the last incremental one (a change against the full build before it: both contents
  // are read and aligned). Neither is in the controller's memory by now: the first call is cold.
  const diffOf = async (to, what) => {
    const times = [];
    let diff;
    for (let i = 0; i < 3; i++) {
      t = performance.now();
      diff = await call("GET", `/v1/revisions/${first.result.revision_id}/diff/${to}?limit=10`);
      times.push(performance.now() - t);
    }
    console.log(
      `diff of the first revision and ${what}: added ${diff.added_count}, removed ${diff.removed_count}, changed ${diff.changed_count}; first (cold) ${times[0].toFixed(0)} ms, median of 3 ${median(times).toFixed(0)} ms  (target ≤ 300 ms)`,
    );
  };
  await diffOf(inc.result.revision_id, "the incremental one made from it");
  if (pairs.length > 1) await diffOf(pairs.at(-1).inc.result.revision_id, "the last incremental one");

  // Lookup against a bare Fastify route served by the controller's process, round by round (which
  // goes first alternates), so that load from other processes falls on both alike.
  const targets = feedLines(0)
    .slice(0, 2000)
    .map((p) => p.replace("0/24", "7").replace("::/48", "::7"));
  const lookupPath = (n) => `/v1/lookup?q=${targets[n % targets.length]}`;
  await closedLoopLoad(controller.url, lookupPath, 1, KEY);
  await closedLoopLoad(controller.bareUrl, () => "/bare", 1, KEY);
  // The server's main-thread CPU a request as well (from /proc, as lookup-builds.mjs reads it):
  // on a shared machine the p99 follows the load, the CPU a request much less so.
  const mainThreadNs = () => threadNs(controller.pid);
  const loadOf = async (base, pathFor) => {
    const before = mainThreadNs();
    const r = await closedLoopLoad(base, pathFor, LOOKUP_SECONDS, KEY);
    return { ...r, serverUs: (mainThreadNs() - before) / 1e3 / (r.rps * LOOKUP_SECONDS) };
  };
  const rounds = [];
  for (let i = 0; i < LOOKUP_ROUNDS; i++) {
    const order = i % 2 ? ["l", "b"] : ["b", "l"];
    const r = {};
    for (const which of order) r[which] = which === "b" ? await loadOf(controller.bareUrl, () => "/bare") : await loadOf(controller.url, lookupPath);
    rounds.push(r);
  }
  const ratios = rounds.map((r) => r.l.p99 / r.b.p99);
  console.log(
    `lookup p99 ${median(rounds.map((r) => r.l.p99)).toFixed(2)} ms vs bare route ${median(rounds.map((r) => r.b.p99)).toFixed(2)} ms: median of the rounds' ratios ${median(ratios).toFixed(2)}×  (target ≤ 1.2×; ${LOOKUP_ROUNDS} rounds of ${LOOKUP_SECONDS} s each: ${ratios.map((x) => x.toFixed(2)).join(", ")}); p50 ${median(rounds.map((r) => r.l.p50 / r.b.p50)).toFixed(2)}×, requests/s ${median(rounds.map((r) => r.l.rps)).toFixed(0)} vs ${median(rounds.map((r) => r.b.rps)).toFixed(0)}; ` +
      `the server's main-thread CPU ${median(rounds.map((r) => r.l.serverUs)).toFixed(1)} µs a lookup vs ${median(rounds.map((r) => r.b.serverUs)).toFixed(1)} µs a bare request (load average ${loadavg()[0].toFixed(1)})`,
  );
  // Before the rounds inside its process: their client's garbage is the controller's heap's then.
  const afterLookups = controller.memory();
  // The same inside the controller's process (client and server on one CPU, as the target was first measured).
  const paths = targets.map((_, n) => lookupPath(n));
  const inside = [];
  for (let i = 0; i < LOOKUP_ROUNDS; i++) {
    const r = {};
    for (const which of i % 2 ? ["l", "b"] : ["b", "l"]) r[which] = await controller.loadInside(which === "l" ? paths : null, LOOKUP_SECONDS, KEY);
    inside.push(r);
  }
  const insideRatios = inside.map((r) => r.l.p99 / r.b.p99);
  console.log(
    `  in the controller's process: lookup p99 ${median(inside.map((r) => r.l.p99)).toFixed(2)} ms vs bare route ${median(inside.map((r) => r.b.p99)).toFixed(2)} ms: median of the rounds' ratios ${median(insideRatios).toFixed(2)}×  (target ≤ 1.2×: ${insideRatios.map((x) => x.toFixed(2)).join(", ")}); requests/s ${median(inside.map((r) => r.l.rps)).toFixed(0)} vs ${median(inside.map((r) => r.b.rps)).toFixed(0)}`,
  );
  console.log(
    `the controller's RSS after the lookups from another process (the tenant's lookup view built on the first) ${mib(afterLookups.rssMiB)}; its peak since the full refresh ${mib(afterLookups.peakMiB)}`,
  );
  console.log("not measured here: agents notified and on probation (the fan-out harness, bench/fanout.mjs, with 200 agents)");
} finally {
  await controller.close();
  await sql.end();
  feedServer.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
}
