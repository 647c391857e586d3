// The issue-26 goal itself: the refresh of a tenant of ~1,000,000 validated prefixes with RPKI
// validation on, against the same refresh without, in the same run. A controller on PostgreSQL
// (TEST_DATABASE_URL) with a file ASN source (CAIDA pfx2as, generated: 1,350,000 announcements as
// rpki-validate.mjs makes them, ~1,000,000 per-origin prefixes once the file index has merged each
// origin's ranges) and an rpki-client VRP file of 500,000 ROAs; one AS_PREFIXES module with an
// entry per origin ASN (~65,000, imported as CSV). Refreshes go round rpki_policy off, report
// and drop_invalid, each timed by the job's own duration_ms and phases. Prints medians and
// ratios; asserts nothing.
//
//   npx turbo run build --output-logs=errors-only && node bench/rpki-refresh.mjs
//   BENCH_RUNS=3 …   BENCH_ROAS=500000 BENCH_PREFIXES=1350000 …
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { loadConfig } from "../packages/controller/dist/config.js";
import { startController } from "../packages/controller/dist/controller.js";
import { refreshToEnd } from "./refresh-job.mjs";
import { rpkiBenchData } from "./rpki-data.mjs";

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const ROAS = Number(process.env.BENCH_ROAS ?? 500_000);
const PREFIXES = Number(process.env.BENCH_PREFIXES ?? 1_350_000);
const adminUrl = process.env.TEST_DATABASE_URL || "postgres://postgres@127.0.0.1:5432/postgres";
const dbName = `rlc_bench_rpki_${process.pid}`;
const KEY = `rlk_BENCHKEY_${"r".repeat(43)}`;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const s = (ms) => `${(ms / 1000).toFixed(2)} s`;

const dir = mkdtempSync(join(tmpdir(), "rl-bench-rpki-"));
const { text, groups } = rpkiBenchData(ROAS, PREFIXES);
writeFileSync(join(dir, "vrps.json"), text);
// pfx2as: prefix, length, origin ASN, one line each.
writeFileSync(join(dir, "pfx2as.txt"), groups.flatMap((g) => g.prefixes.map((p) => `${p.replace("/", "\t")}\t${g.origin}`)).join("\n"));
const asns = groups.map((g) => g.origin);
console.log(`${PREFIXES.toLocaleString()} announcements from ${asns.length.toLocaleString()} ASNs; VRP file of ${ROAS.toLocaleString()} ROAs`);

const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
await admin.unsafe(`CREATE DATABASE ${dbName}`);
const dbUrl = new URL(adminUrl);
dbUrl.pathname = `/${dbName}`;
const controller = await startController(
  loadConfig({
    DATABASE_URL: dbUrl.toString(),
    LOG_LEVEL: "silent",
    BOOTSTRAP_API_KEY: KEY,
    ASN_SOURCE: `file:${join(dir, "pfx2as.txt")}`,
    RPKI_VRP_SOURCE: `file:${join(dir, "vrps.json")}`,
    HTTP_HOST: "127.0.0.1",
    HTTP_PORT: "0",
  }),
  { logger: false },
);
const call = async (method, url, payload, headers = {}) => {
  const res = await controller.app.inject({ method, url, headers: { authorization: `Bearer ${KEY}`, ...headers }, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
/** A forced refresh of the module, followed to its end; answers the job. */
const refresh = (id) => refreshToEnd(call, `/v1/modules/${id}/refresh?wait=true`, { force: true });

try {
  const community = await call("POST", "/v1/communities", { community: "65000:26", title: "cone" });
  const mod = await call("POST", "/v1/modules", { name: "cone", type: "AS_PREFIXES", community_id: community.id });
  await call("POST", `/v1/modules/${mod.id}/entries.csv`, `asn,comment\n${asns.join(",\n")},\n`, { "content-type": "text/csv" });
  const policy = (rpki_policy) => call("PATCH", `/v1/modules/${mod.id}`, { rpki_policy });
  // Warm up: the ASN file's and the VRP file's first reads, and the code's first runs.
  await policy("report");
  const first = await refresh(mod.id);
  console.log(
    `collected ${first.result.modules[0].prefix_count.toLocaleString()} distinct prefixes; rpki ${JSON.stringify(first.result.modules[0].rpki)}; VRPs ${first.result.rpki.vrp_count.toLocaleString()}`,
  );
  // Rounds of off, report, drop_invalid, each policy refreshed twice in a row: the first refresh
  // after a change of policy may change the revision (drop_invalid's leaves out what off's has),
  // which the build, the revision write and its bundle sections pay once; the second is the
  // steady state, what every later refresh of the tenant costs. Both are printed; the ratio is
  // of the steady ones.
  const POLICIES = ["off", "report", "drop_invalid"];
  const steady = Object.fromEntries(POLICIES.map((p) => [p, []]));
  const change = Object.fromEntries(POLICIES.map((p) => [p, []]));
  const timed = async () => {
    const job = await refresh(mod.id);
    return { ...job.result.timings_ms, total: job.result.duration_ms };
  };
  for (let r = 0; r < RUNS; r++) {
    for (const p of POLICIES) {
      await policy(p);
      change[p].push(await timed());
      steady[p].push(await timed());
    }
  }
  const medians = (list) => Object.fromEntries(Object.keys(list[0]).map((k) => [k, median(list.map((t) => t[k]))]));
  const phases = (m) =>
    `collect ${s(m.collect)}, aggregate (validation + build) ${s(m.aggregate)}, snapshot write ${s(m.snapshot_write)}, revision write ${s(m.revision_write + m.sections_write)}`;
  const m = Object.fromEntries(POLICIES.map((p) => [p, medians(steady[p])]));
  for (const p of POLICIES) {
    console.log(`rpki_policy ${p.padEnd(12)} refresh ${s(m[p].total)} (${phases(m[p])}); right after the policy changed ${s(medians(change[p]).total)}`);
  }
  console.log(
    `refresh with / without validation: report ${(m.report.total / m.off.total).toFixed(2)}x, drop_invalid ${(m.drop_invalid.total / m.off.total).toFixed(2)}x (goal ≤ 1.2x)`,
  );
} finally {
  await controller.close();
  await admin.unsafe(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  await admin.end();
  rmSync(dir, { recursive: true, force: true });
}
