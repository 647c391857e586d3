import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadBuildInfo as controllerBuildInfo } from "../../packages/controller/src/lib/build-info.js";
import { releaseVersion } from "../../packages/shared/src/version.js";

// One version rule (packages/shared/src/version.ts) for everything the repository builds: the
// agent run from this checkout (`npx rl-agent`, built) and the controller say the version git
// derives from the tags, not their package.json's 0.0.0.

const root = join(import.meta.dirname, "../..");

describe("the version of this checkout", () => {
  const expected = releaseVersion(root);

  it("is the git-derived one", () => {
    expect(expected).toMatch(/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+g[0-9a-f]{7,})?$/);
    expect(expected).not.toBe("0.0.0");
  });

  it("is what rl-agent --version prints when run from the built sources", () => {
    const printed = execFileSync(process.execPath, [join(root, "packages/agent/bin/rl-agent.mjs"), "--version"], { encoding: "utf8" }).trim();
    expect(printed).toBe(expected);
  });

  it("is the controller's /version", () => {
    expect(controllerBuildInfo().version).toBe(expected);
  });
});
