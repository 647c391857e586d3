import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { releaseVersion } from "../../packages/shared/src/version.js";

// What a fresh clone needs before anything is built: a lockfile `npm ci` can trust, an rl-agent
// link after one `npm install`, and a license.

const root = join(import.meta.dirname, "../..");
const read = (path: string) => JSON.parse(readFileSync(join(root, path), "utf8"));
const workspaces: string[] = read("package.json").workspaces;

/** Where package.json and package-lock.json disagree, `npm install` rewrites the lockfile and `npm ci` refuses. */
function lockfileDrift(lock: { packages: Record<string, Record<string, unknown>> }, manifest: (path: string) => Record<string, unknown>): string[] {
  const drift: string[] = [];
  for (const path of ["", ...workspaces]) {
    const pkg = manifest(path === "" ? "package.json" : `${path}/package.json`);
    const locked = lock.packages[path] ?? {};
    for (const field of ["dependencies", "devDependencies", "optionalDependencies", "peerDependencies"]) {
      const want = JSON.stringify(Object.entries((pkg[field] as Record<string, string>) ?? {}).sort());
      const have = JSON.stringify(Object.entries((locked[field] as Record<string, string>) ?? {}).sort());
      if (want !== have) drift.push(`${path || "(root)"} ${field}`);
    }
    // npm records these of each workspace too, and rewrites the lockfile when they differ.
    const bin = (b: unknown) =>
      JSON.stringify(typeof b === "object" && b ? Object.entries(b).map(([k, v]) => [k, String(v).replace(/^\.\//, "")]) : (b ?? null));
    if (bin(pkg.bin) !== bin(locked.bin)) drift.push(`${path || "(root)"} bin`);
    for (const field of ["license", "version"]) if (path !== "" && (pkg[field] ?? null) !== (locked[field] ?? null)) drift.push(`${path} ${field}`);
    if (path === "" && (pkg.license ?? null) !== (locked.license ?? null)) drift.push("(root) license");
  }
  return drift;
}

describe("a fresh clone", () => {
  it("package-lock.json matches every package.json, so npm install leaves it alone and npm ci accepts it", () => {
    expect(lockfileDrift(read("package-lock.json"), read)).toEqual([]);
  });

  it("the rl-agent bin target is committed and says to build when dist/ is missing", () => {
    const bin = read("packages/agent/package.json").bin["rl-agent"] as string;
    const file = join(root, "packages/agent", bin);
    expect(bin).not.toMatch(/^\.?\/?dist\//);
    expect(statSync(file).mode & 0o111).toBeTruthy();
    const tracked = spawnSync("git", ["ls-files", "--error-unmatch", join("packages/agent", bin)], { cwd: root });
    expect(tracked.status).toBe(0);
    // With dist/ present (npm test builds first) it runs the agent, which says the checkout's
    // version (git's, test/package/version.test.ts), else its package.json's.
    if (existsSync(join(root, "packages/agent/dist/main.js"))) {
      const r = spawnSync(process.execPath, [file, "--version"], { encoding: "utf8" });
      expect(r.stdout.trim()).toBe(releaseVersion(root) ?? read("packages/agent/package.json").version);
    }
  });

  it("the project's scripts install with npm ci when the lockfile is there", async () => {
    const { installCommand } = await import("../../scripts/lib.mjs");
    expect(installCommand()).toEqual(["ci"]);
  });

  it("LICENSE is Apache-2.0, and every package says so", () => {
    expect(readFileSync(join(root, "LICENSE"), "utf8")).toContain("Apache License\n                           Version 2.0");
    for (const path of ["", ...workspaces]) expect(read(path === "" ? "package.json" : `${path}/package.json`).license, path).toBe("Apache-2.0");
  });
});
