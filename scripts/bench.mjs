// `npm run bench`: builds, then runs every bench/*.mjs in turn. Benchmarks print figures
// (medians and ratios against a peer measured in the same run); they never fail on a time.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { ensureBuilt, ensureInstalled, root, run } from "./lib.mjs";

ensureInstalled();
ensureBuilt();
const only = process.argv.slice(2);
const files = readdirSync(join(root, "bench"))
  .filter((f) => f.endsWith(".mjs") && (!only.length || only.some((o) => f.includes(o))))
  .sort();
let failed = 0;
for (const f of files) {
  process.stdout.write(`\n=== bench/${f} ===\n`);
  if (run(process.execPath, ["--expose-gc", "--max-old-space-size=4096", join(root, "bench", f)]) !== 0) failed++;
}
process.exit(failed ? 1 : 0);
