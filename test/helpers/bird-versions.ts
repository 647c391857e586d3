import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, it } from "vitest";
import { birdRoots } from "../../scripts/bird-roots.mjs";
import { tool } from "./tools.js";

// The BIRD matrix of the real-BIRD tests: the machine's BIRD (2.0 on Debian 12) and Debian 13's
// bird2 (2.17) and bird3 (3.1) from the trixie roots scripts/bird-roots.mjs makes (npm test makes
// them once, as root). Each suite runs once per BIRD, the version in its title.

export interface BirdUnderTest {
  /** What `bird --version` says (`2.0.12`, `3.1.8`), or the series when it cannot be had. */
  version: string;
  /** Where it comes from, for the title. */
  source: string;
  available: boolean;
  /** Why it cannot be had (empty when it can). */
  reason: string;
  /** The `bird` and `birdc` to run. */
  bird: string;
  birdc: string;
  /** process.env with this BIRD's directory first on PATH, for child processes (the agent's `bird -p`). */
  env: NodeJS.ProcessEnv;
}

const VERSION = /BIRD version (\S+)/;

function hostBird(): BirdUnderTest {
  const found = spawnSync("sh", ["-c", "command -v bird"], { encoding: "utf8" });
  const bird = found.stdout.trim();
  const shown = bird ? spawnSync(bird, ["--version"], { encoding: "utf8" }) : null;
  const version = VERSION.exec(`${shown?.stdout ?? ""}${shown?.stderr ?? ""}`)?.[1];
  return {
    version: version ?? "2",
    source: "this machine",
    available: Boolean(version),
    reason: version ? "" : "bird is not installed (npm test installs bird2 with apt when run as root)",
    bird: bird || "bird",
    birdc: "birdc",
    env: process.env,
  };
}

function rootBirds(): BirdUnderTest[] {
  // chroot and the wrappers' bind mounts need root, whoever made the roots.
  const root = process.getuid?.() === 0;
  return birdRoots().map((r) => ({
    version: r.version || r.series,
    source: `Debian 13 ${r.pkg}`,
    available: Boolean(r.version) && root,
    reason: !r.version
      ? `no Debian 13 root with ${r.pkg} in ${r.root} (npm test makes it with debootstrap when run as root)`
      : root
        ? ""
        : "not root (the Debian 13 BIRDs run through chroot)",
    bird: join(r.bin, "bird"),
    birdc: join(r.bin, "birdc"),
    env: { ...process.env, PATH: `${r.bin}:${process.env.PATH ?? ""}` },
  }));
}

/**
 * Every BIRD of the matrix. RLC_BIRDS (e.g. `2.0,3.1`, or `host` for the machine's) keeps those
 * whose version starts with one of its entries: npm test's run on the embedded database sets
 * `host`, and it runs one version by hand.
 */
export function birdsUnderTest(): BirdUnderTest[] {
  const all = [hostBird(), ...rootBirds()];
  const only = process.env.RLC_BIRDS?.split(",").filter(Boolean);
  return only ? all.filter((b) => only.some((o) => (o === "host" ? b.source === "this machine" : b.version.startsWith(o)))) : all;
}

/**
 * `describe(title on BIRD x)` for each BIRD of the matrix (less `except`). A BIRD (or a tool of `needs`) that
 * cannot be had skips its suite with the reason in the title outside CI; with CI=true its suite
 * fails, so CI never passes by skipping.
 */
export function describeEachBird(title: string, needs: string[], body: (b: BirdUnderTest) => void, options: { except?: string[] } = {}): void {
  const missingTools = needs.filter((bin) => !tool(bin).available);
  // `except`: versions (prefixes) a long suite leaves out of the whole matrix to keep npm test's
  // time (docs/testing.md says which). Versions named in RLC_BIRDS run every suite: a file run for
  // 2.17 alone would otherwise hold no suite, which vitest fails.
  const whole = !process.env.RLC_BIRDS;
  const chosen = birdsUnderTest().filter((b) => !whole || !options.except?.some((e) => b.version.startsWith(e)));
  for (const b of chosen) {
    const name = `${title} — BIRD ${b.version} (${b.source})`;
    const reason = b.reason || (missingTools.length ? `${missingTools.join(", ")} not on PATH` : "");
    if (!reason) describe(name, () => body(b));
    else if (process.env.CI === "true") {
      describe(name, () => {
        it("has its BIRD and tools (CI=true)", () => {
          throw new Error(`CI=true and ${reason}`);
        });
      });
    } else {
      process.stderr.write(`[skip] ${name}: ${reason}\n`);
      // Skipped on purpose, only outside CI: a BIRD this machine cannot have (no Debian 13 root,
      // not root to make one) is reported as skipped with the reason, as the project's rule for
      // end-to-end tools says; with CI=true the branch above makes the same case a failure.
      describe.skip(`${name} (skipped: ${reason})`, () => body(b));
    }
  }
}
