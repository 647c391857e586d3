// `npm test`: install and build when needed, make sure PostgreSQL, NATS, the end-to-end tools
// and the BIRD matrix's Debian 13 roots are there, run every test, and print one closing line
// "N passed, N failed, N skipped".
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { ensureBirdRoots } from "./bird-roots.mjs";
import { ensureBuilt, ensureInstalled, root } from "./lib.mjs";
import { EMBEDDED_NODE, nodeBinary } from "./node-dist.mjs";
import { ensureAptTools, ensureNats, ensurePostgres } from "./services.mjs";

ensureInstalled();
ensureBuilt();
ensureAptTools();
// BIRD 2.17 and 3.1 (Debian 13) beside the machine's: made once, cached outside the repository.
ensureBirdRoots();
const databaseUrl = await ensurePostgres();
const natsUrl = await ensureNats();

const outDir = join(root, ".test-output");
mkdirSync(outDir, { recursive: true });

/**
 * Two runs: every test on PostgreSQL, then the API, job, ingest, deploy and maintenance suites
 * again on the embedded database (vitest.embedded.config.ts), what `npm start` runs on.
 * `npm test -- <filter>` passes the filter to both; `TEST_DB=postgres|embedded` runs one.
 */
const runs = [
  { name: "postgres", config: "vitest.config.ts", env: {} },
  // The BIRD matrix is no database's business: the embedded run takes the machine's BIRD only.
  { name: "embedded", config: "vitest.embedded.config.ts", env: { RLC_BIRDS: process.env.RLC_BIRDS ?? "host" } },
].filter((r) => !process.env.TEST_DB || process.env.TEST_DB === r.name);

/**
 * RLC_TEST_NODE=24 runs vitest (and so every test process it forks) on the Node 24 LTS the agent
 * embeds (scripts/node-dist.mjs) instead of this machine's Node: CI runs the unit and API suites
 * so (`.ci/run`), so that nothing in the code is tied to one Node.
 */
const vitest = process.env.RLC_TEST_NODE === "24" ? [nodeBinary(process.arch), join(root, "node_modules/vitest/vitest.mjs")] : ["npx", "vitest"];
if (process.env.RLC_TEST_NODE === "24") process.stdout.write(`vitest on Node ${EMBEDDED_NODE} (${vitest[0]})\n`);

let status = 0;
const totals = { passed: 0, failed: 0, skipped: 0, broken: 0 };
/** Each failed test as `run: file > name: first line of its message`, repeated after the totals. */
const failures = [];
const firstLine = (text) =>
  String(text ?? "")
    .split("\n")[0]
    .slice(0, 300);
for (const run of runs) {
  const results = join(outDir, `results-${run.name}.json`);
  rmSync(results, { force: true });
  process.stdout.write(`\n== tests on ${run.name} ==\n`);
  const r = spawnSync(
    vitest[0],
    [...vitest.slice(1), "run", "-c", run.config, "--reporter=default", "--reporter=json", `--outputFile.json=${results}`, ...process.argv.slice(2)],
    { cwd: root, stdio: "inherit", env: { ...process.env, ...run.env, TEST_DB: run.name, TEST_DATABASE_URL: databaseUrl, TEST_NATS_URL: natsUrl } },
  );
  if (existsSync(results)) {
    const report = JSON.parse(readFileSync(results, "utf8"));
    const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
    // A file that fails to load (a broken import) fails no test: it is counted, and said, on its own.
    const broken = (report.testResults ?? []).filter((f) => f.status === "failed" && !(f.assertionResults ?? []).length).length;
    const files = broken ? `, ${broken} test file(s) failed to load` : "";
    process.stdout.write(`${run.name}: ${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped${files}\n`);
    totals.broken += broken;
    totals.passed += report.numPassedTests;
    totals.failed += report.numFailedTests;
    totals.skipped += skipped;
    for (const file of report.testResults ?? []) {
      const where = relative(root, file.name ?? "");
      for (const t of file.assertionResults ?? []) {
        if (t.status !== "failed") continue;
        failures.push(`${run.name}: ${where} > ${t.fullName ?? t.title}: ${firstLine(t.failureMessages?.[0])}`);
      }
      if (file.status === "failed" && !(file.assertionResults ?? []).length) failures.push(`${run.name}: ${where}: ${firstLine(file.message)}`);
    }
  }
  if ((r.status ?? 1) !== 0) status = r.status ?? 1;
}
const brokenFiles = totals.broken ? ` (${totals.broken} test file(s) failed to load)` : "";
process.stdout.write(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped${brokenFiles}\n`);
// Said last, where a log's tail (CI's) still shows them after the runs' long output.
if (failures.length) process.stdout.write(`failed:\n${failures.map((f) => `  ${f}`).join("\n")}\n`);
process.exit(status);
