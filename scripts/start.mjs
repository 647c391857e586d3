// `npm start`: install and build when needed, then run the controller in the foreground.
// With no DATABASE_URL it runs on the embedded PostgreSQL under APP_DATA_DIR (./data).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { ensureBuilt, ensureInstalled, root } from "./lib.mjs";

ensureInstalled();
ensureBuilt();
const child = spawn(process.execPath, [join(root, "packages/controller/dist/server.js")], { cwd: root, stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => child.kill(sig));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
