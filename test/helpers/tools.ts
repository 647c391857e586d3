import { spawnSync } from "node:child_process";

/**
 * Whether an external tool is on PATH. Outside CI a missing tool skips its tests with the
 * reason printed; with CI=true it is a failure, so CI never passes by skipping.
 */
export function tool(name: string): { available: boolean; reason: string } {
  const found = spawnSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" }).status === 0;
  const reason = `${name} is not installed (npm test installs it with apt when run as root)`;
  if (!found && process.env.CI === "true") throw new Error(`CI=true and ${reason}`);
  if (!found) process.stderr.write(`[skip] ${reason}\n`);
  return { available: found, reason };
}
