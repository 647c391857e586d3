// `npm run controller -- <command>`: the controller CLI (tenant create, key create, migrate).
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { ensureBuilt, ensureInstalled, root } from "./lib.mjs";

ensureInstalled();
ensureBuilt();
const r = spawnSync(process.execPath, [join(root, "packages/controller/dist/cli.js"), ...process.argv.slice(2)], { cwd: root, stdio: "inherit" });
process.exit(r.status ?? 1);
