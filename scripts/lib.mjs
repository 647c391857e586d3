// Shared steps of `npm start`, `npm test`, `npm run bench` and `npm run controller`:
// install when needed, build when needed. Plain Node, no dependencies: it runs before npm install.
import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const root = join(dirname(fileURLToPath(import.meta.url)), "..");

export function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...opts, env: { ...process.env, ...opts.env } });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

export function mustRun(cmd, args, opts = {}) {
  const status = run(cmd, args, opts);
  if (status !== 0) {
    process.stderr.write(`\n${cmd} ${args.join(" ")} failed (exit ${status})\n`);
    process.exit(status);
  }
}

/**
 * Installs when node_modules is missing or older than package-lock.json: `npm ci` (exactly the
 * lockfile, which it never rewrites) when there is one, `npm install` otherwise.
 */
export function ensureInstalled() {
  const marker = join(root, "node_modules", ".package-lock.json");
  const lock = join(root, "package-lock.json");
  const stale = !existsSync(marker) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs);
  if (stale) {
    const command = installCommand();
    process.stdout.write(`installing dependencies (npm ${command.join(" ")})…\n`);
    if (run("npm", [...command, "--no-audit", "--no-fund"]) === 0) return;
    // npm 11 can refuse a lockfile it wrote itself as "not in sync" when the lockfile leaves out
    // other platforms' optional packages (seen here with biome's and rollup's); `npm install`
    // installs the same versions from it.
    if (command[0] !== "ci") process.exit(1);
    process.stdout.write("npm ci refused the lockfile; installing from it with npm install…\n");
    mustRun("npm", ["install", "--no-audit", "--no-fund"]);
  }
}

export function installCommand() {
  return existsSync(join(root, "package-lock.json")) ? ["ci"] : ["install"];
}

/** Builds every workspace through turbo (cached: a no-op when nothing changed). */
export function ensureBuilt() {
  mustRun("npx", ["turbo", "run", "build", "--output-logs=errors-only"], {
    env: { TURBO_TELEMETRY_DISABLED: "1", TURBO_NO_UPDATE_NOTIFIER: "1", DO_NOT_TRACK: "1" },
  });
}
