import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { describeBuild, loadBuildInfo, releaseVersion, versionFromDescribe } from "./version.js";

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "rl-version-"));
  dirs.push(d);
  return d;
};
const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", ...args], {
    cwd,
    encoding: "utf8",
  }).trim();
const commit = (cwd: string) => git(cwd, "commit", "-q", "--allow-empty", "-m", "c");

describe("versionFromDescribe", () => {
  it.each([
    ["v1.4.0", "1.4.0"],
    ["v1.4.0-3-gabc1234", "1.4.0-dev.3+gabc1234"],
    ["v2.0.0-rc.1", "2.0.0-rc.1"],
    ["v2.0.0-rc.1-2-gabc1234", "2.0.0-rc.1-dev.2+gabc1234"],
    [null, "0.0.0-dev+gdef5678"],
    ["release-7", "0.0.0-dev+gdef5678"],
  ])("%s → %s", (described, version) => {
    expect(versionFromDescribe(described, "def5678")).toBe(version);
  });
});

describe("releaseVersion in a repository", () => {
  it("follows the tags: none, on a tag, commits after it; null outside git", () => {
    const repo = tempDir();
    git(repo, "init", "-q");
    commit(repo);
    const sha = () => git(repo, "rev-parse", "--short=7", "HEAD");
    expect(releaseVersion(repo)).toBe(`0.0.0-dev+g${sha()}`);
    git(repo, "tag", "v1.4.0");
    expect(releaseVersion(repo)).toBe("1.4.0");
    commit(repo);
    commit(repo);
    expect(releaseVersion(repo)).toBe(`1.4.0-dev.2+g${sha()}`);
    expect(describeBuild(repo, new Date("2026-11-27T00:00:00Z"))).toEqual({
      version: `1.4.0-dev.2+g${sha()}`,
      commit: sha(),
      build_time: "2026-11-27T00:00:00.000Z",
    });
    expect(releaseVersion(tempDir())).toBeNull();
  });
});

describe("loadBuildInfo of a package", () => {
  const pkg = (files: Record<string, string>) => {
    const dir = tempDir();
    mkdirSync(join(dir, "dist"));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return pathToFileURL(dir); // no trailing slash: taken as the folder all the same
  };

  it("outside git reads what the build recorded in dist/build-info.json", () => {
    const info = { version: "1.4.0", commit: "abc1234", build_time: "2026-11-27T00:00:00.000Z" };
    expect(loadBuildInfo(pkg({ "package.json": '{"version":"0.0.0"}', "dist/build-info.json": JSON.stringify(info) }))).toEqual(info);
  });

  it("outside git and without a build record says the package.json version", () => {
    expect(loadBuildInfo(pkg({ "package.json": '{"version":"0.3.1"}' }))).toMatchObject({ version: "0.3.1", commit: "unknown" });
  });

  it("in a git checkout asks git, whatever an older build recorded", () => {
    const repo = tempDir();
    git(repo, "init", "-q");
    commit(repo);
    git(repo, "tag", "v3.0.0");
    mkdirSync(join(repo, "dist"));
    writeFileSync(join(repo, "dist/build-info.json"), JSON.stringify({ version: "2.9.0", commit: "old", build_time: "x" }));
    expect(loadBuildInfo(pathToFileURL(`${repo}/`)).version).toBe("3.0.0");
  });
});
