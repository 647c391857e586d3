import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export interface BuildInfo {
  version: string;
  commit: string;
  build_time: string;
}

const git = (args: string[], cwd: string) => execFileSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();

/** Version from the repository's tags (`git describe`): `v1.4.0` → `1.4.0`; none → `0.0.0-dev`. */
export function describeVersion(cwd: string): BuildInfo {
  let version = "0.0.0-dev";
  let commit = "unknown";
  try {
    commit = git(["rev-parse", "--short", "HEAD"], cwd);
    const described = git(["describe", "--tags", "--match", "v[0-9]*", "--abbrev=7"], cwd);
    const m = /^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)(?:-(\d+)-g([0-9a-f]+))?$/.exec(described);
    if (m) version = m[2] ? `${m[1]}-dev.${m[2]}+g${m[3]}` : m[1]!;
  } catch {
    // no git or no tag: keep the defaults
  }
  return { version, commit, build_time: new Date().toISOString() };
}

/** dist/build-info.json written by the build; the sources (tests) ask git directly. */
export function loadBuildInfo(): BuildInfo {
  try {
    return JSON.parse(readFileSync(fileURLToPath(new URL("../build-info.json", import.meta.url)), "utf8")) as BuildInfo;
  } catch {
    return describeVersion(fileURLToPath(new URL(".", import.meta.url)));
  }
}
