import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { tool } from "./tools.js";

// Debian's Chromium driven by playwright-core: no browser download, the one the system has.

const root = join(import.meta.dirname, "../..");
export const CHROMIUM = "/usr/bin/chromium";

/** Chromium on PATH: skipped with the reason outside CI, a failure with CI=true (see tools.ts). */
export const chromiumTool = () => tool("chromium");

export function launchChromium(): Promise<Browser> {
  // --no-sandbox: the tests run as root in a container, where Chromium's sandbox cannot start.
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
}

/** The console's built files, building them once when a source checkout has none yet. */
export function ensureConsoleBuilt(): string {
  const dist = join(root, "packages/console/dist");
  if (!existsSync(join(dist, "index.html"))) {
    const r = spawnSync("npx", ["vite", "build"], { cwd: join(root, "packages/console"), stdio: "inherit" });
    if (r.status !== 0) throw new Error("building the console failed (npx vite build in packages/console)");
  }
  return dist;
}
