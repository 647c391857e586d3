// `npm test`: install and build when needed, make sure PostgreSQL, NATS and the end-to-end
// tools are there, run every test, and print one closing line "N passed, N failed, N skipped".
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ensureBuilt, ensureInstalled, root } from "./lib.mjs";
import { ensureAptTools, ensureNats, ensurePostgres } from "./services.mjs";

ensureInstalled();
ensureBuilt();
ensureAptTools();
const databaseUrl = await ensurePostgres();
const natsUrl = await ensureNats();

const outDir = join(root, ".test-output");
mkdirSync(outDir, { recursive: true });
const results = join(outDir, "results.json");
rmSync(results, { force: true });
const r = spawnSync(
  "npx",
  ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${results}`, ...process.argv.slice(2)],
  { cwd: root, stdio: "inherit", env: { ...process.env, TEST_DATABASE_URL: databaseUrl, TEST_NATS_URL: natsUrl } },
);

if (existsSync(results)) {
  const report = JSON.parse(readFileSync(results, "utf8"));
  const skipped = (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  process.stdout.write(`\n${report.numPassedTests} passed, ${report.numFailedTests} failed, ${skipped} skipped\n`);
}
process.exit(r.status ?? 1);
