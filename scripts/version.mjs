// The release version of what the build makes (the agent's executable and .deb), from the
// repository's tags, as the controller's /version has it (packages/controller/src/lib/build-info.ts):
// semantic versioning, a release being a tag `v<major>.<minor>.<patch>`.
import { spawnSync } from "node:child_process";

const git = (args, cwd) => {
  const r = spawnSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  return r.status === 0 ? r.stdout.trim() : null;
};

/**
 * `git describe --tags --match 'v[0-9]*'`: on the tag `v1.4.0` → `1.4.0`; 3 commits after it →
 * `1.4.0-dev.3+g<sha>`; with no tag at all → `0.0.0-dev+g<sha>`; outside a git checkout (a source
 * tarball) → `fallback` (the agent's package.json version).
 */
export function releaseVersion(cwd, fallback) {
  const sha = git(["rev-parse", "--short=7", "HEAD"], cwd);
  if (!sha) return fallback;
  const described = git(["describe", "--tags", "--match", "v[0-9]*", "--abbrev=7"], cwd);
  const m = described ? /^v(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?)(?:-(\d+)-g([0-9a-f]+))?$/.exec(described) : null;
  if (!m) return `0.0.0-dev+g${sha}`;
  return m[2] ? `${m[1]}-dev.${m[2]}+g${m[3]}` : m[1];
}

/**
 * The same version as Debian orders it: a build after a release sorts after it
 * (`1.4.0-dev.3+gabc1234` → `1.4.0+dev.3.gabc1234`), one before any release before every release
 * (`0.0.0-dev+gabc1234` → `0.0.0~dev+gabc1234`), a pre-release before its release (`2.0.0-rc.1` → `2.0.0~rc.1`).
 */
export function debianVersion(version) {
  const after = /^(\d+\.\d+\.\d+)-dev\.(\d+)\+g([0-9a-f]+)$/.exec(version);
  if (after) return `${after[1]}+dev.${after[2]}.g${after[3]}`;
  return version.replace("-", "~");
}
