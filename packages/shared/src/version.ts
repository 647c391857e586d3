import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

// The release version of what this repository builds, one rule for all of it: the controller's
// `/version`, `rl-agent --version` and the agents' reports, the .deb (scripts/package.mjs).
// Semantic versioning from the repository's tags, a release being a tag `v<major>.<minor>.<patch>`.

export interface BuildInfo {
  version: string;
  /** Short commit, `unknown` outside a git checkout. */
  commit: string;
  build_time: string;
}

const TAG = /^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+?)??)(?:-(\d+)-g([0-9a-f]+))?$/;

function git(args: string[], cwd: string): string | null {
  try {
    return execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

/** The version `git describe --tags` gives for `described` at commit `sha` (see {@link releaseVersion}). */
export function versionFromDescribe(described: string | null, sha: string): string {
  const m = described ? TAG.exec(described) : null;
  if (!m) return `0.0.0-dev+g${sha}`;
  return m[2] ? `${m[1]}-dev.${m[2]}+g${m[3]}` : (m[1] as string);
}

/**
 * `git describe --tags --match 'v[0-9]*'` in `cwd`: on the tag `v1.4.0` → `1.4.0`; 3 commits after
 * it → `1.4.0-dev.3+g<sha>`; in a checkout without any tag → `0.0.0-dev+g<sha>`; outside a git
 * checkout (or without git) → null.
 */
export function releaseVersion(cwd: string): string | null {
  const sha = git(["rev-parse", "--short=7", "HEAD"], cwd);
  if (!sha) return null;
  return versionFromDescribe(git(["describe", "--tags", "--match", "v[0-9]*", "--abbrev=7"], cwd), sha);
}

/** What the build records in `dist/build-info.json`: the version and commit of `cwd` now; null outside git. */
export function describeBuild(cwd: string, now = new Date()): BuildInfo | null {
  const version = releaseVersion(cwd);
  if (!version) return null;
  return { version, commit: git(["rev-parse", "--short=7", "HEAD"], cwd) ?? "unknown", build_time: now.toISOString() };
}

/**
 * The build info of the workspace package at `packageDir` (the folder holding its package.json,
 * src/ and dist/), wherever it runs from: in a git checkout, git itself (so a build restored from
 * turbo's cache never shows an older commit); else `dist/build-info.json`, which the build wrote
 * (a copy without .git); else the package.json version.
 */
export function loadBuildInfo(packageDir: URL): BuildInfo {
  if (!packageDir.pathname.endsWith("/")) packageDir = new URL(`${packageDir.href}/`);
  const dir = fileURLToPath(packageDir);
  const described = describeBuild(dir);
  if (described) return described;
  const read = (name: string) => JSON.parse(readFileSync(new URL(name, packageDir), "utf8")) as Record<string, unknown>;
  try {
    return read("dist/build-info.json") as unknown as BuildInfo;
  } catch {
    const version = (() => {
      try {
        return String(read("package.json").version);
      } catch {
        return "0.0.0";
      }
    })();
    return { version, commit: "unknown", build_time: new Date().toISOString() };
  }
}
