import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

// Both units as shipped: systemd accepts them, and their sandboxing scores ≤ 2.0 ("OK") in
// `systemd-analyze security --offline`. Skipped with the reason where systemd-analyze is
// missing; with CI=true that is a failure.

const root = join(import.meta.dirname, "../..");
const units = ["rl-agent.service", "rl-controller.service"];
const available = spawnSync("systemd-analyze", ["--version"], { stdio: "ignore" }).status === 0;
const reason = "systemd-analyze is not installed (apt-get install systemd)";
if (!available && process.env.CI === "true") throw new Error(`CI=true and ${reason}`);
if (!available) process.stderr.write(`[skip] systemd units: ${reason}\n`);

const dir = mkdtempSync(join(tmpdir(), "rl-units-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The unit with its executables pointed at stand-ins, so `verify` checks the unit, not this machine. */
function standIn(unit: string): string {
  const bin = join(dir, "bin");
  mkdirSync(bin, { recursive: true });
  let text = readFileSync(join(root, "deploy/systemd", unit), "utf8");
  for (const exe of ["/usr/bin/rl-agent", "/usr/bin/node"]) {
    const file = join(bin, exe.split("/").pop() as string);
    writeFileSync(file, "#!/bin/sh\n");
    chmodSync(file, 0o755);
    text = text.replaceAll(`ExecStart=${exe}`, `ExecStart=${file}`);
  }
  const path = join(dir, unit);
  writeFileSync(path, text);
  return path;
}

describe.skipIf(!available)(available ? "systemd units" : `systemd units (skipped: ${reason})`, () => {
  for (const unit of units) {
    it(`${unit}: systemd-analyze verify accepts it`, () => {
      const r = spawnSync("systemd-analyze", ["verify", "--man=no", standIn(unit)], { encoding: "utf8" });
      // Only what concerns this unit: the machine's other units may warn about themselves.
      const own = `${r.stdout}${r.stderr}`.split("\n").filter((l) => l.includes(unit));
      expect(own, own.join("\n")).toEqual([]);
    });

    it(`${unit}: exposure ≤ 2.0 in systemd-analyze security --offline`, () => {
      const r = spawnSync("systemd-analyze", ["security", "--offline=true", "--no-pager", join(root, "deploy/systemd", unit)], { encoding: "utf8" });
      const m = /Overall exposure level for \S+: (\d+\.\d)/.exec(r.stdout);
      expect(m, r.stdout + r.stderr).not.toBeNull();
      expect(Number(m?.[1])).toBeLessThanOrEqual(2.0);
    });
  }

  it("rl-controller.service creates its state and log directories", () => {
    const text = readFileSync(join(root, "deploy/systemd/rl-controller.service"), "utf8");
    expect(text).toMatch(/^StateDirectory=rl-controller$/m);
    expect(text).toMatch(/^LogsDirectory=rl-controller$/m);
    expect(text).not.toMatch(/^ReadWritePaths=.*\/var\/log\/rl-controller/m);
  });
});
