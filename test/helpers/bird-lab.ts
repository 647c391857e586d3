import { type ChildProcess, execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { BirdClient } from "../../packages/shared/src/bird/birdc.js";
import type { BundleContent } from "../../packages/shared/src/bundle/index.js";
import { freePort, startBird, startGobgp, stopProcess } from "./lab-daemons.mjs";

// Pieces for tests that run a real BIRD speaking BGP to a real GoBGP on loopback. Starting and
// stopping the daemons is lab-daemons.mjs, which the benchmarks import too.

export { freePort, gobgpdConfig, startProcess, stopProcess } from "./lab-daemons.mjs";

const run = promisify(execFile);

export type Rib = Record<string, string[]>;

/**
 * When BIRD last loaded a configuration, in ms since the epoch (from `show status`). BIRD keeps
 * that time on its monotonic clock and turns it into wall-clock time each time it shows it, so
 * two readings of the same reconfiguration can be a millisecond apart: compare two readings with
 * sameReconfiguration, never as text. A real configure comes far later than that.
 */
export async function lastReconfiguration(birdc: BirdClient): Promise<number> {
  const shown = /Last reconfiguration on (.*)/.exec((await birdc.command("show status")).text)?.[1] ?? "";
  const ms = Date.parse(shown.trim().replace(" ", "T"));
  if (Number.isNaN(ms)) throw new Error(`show status gave no reconfiguration time: ${JSON.stringify(shown)}`);
  return ms;
}

/** Whether two lastReconfiguration readings are the same configure (see there). */
export const sameReconfiguration = (a: number, b: number) => Math.abs(a - b) <= 5;

/** GoBGP's global RIB as `prefix → sorted communities` (standard as `A:V`, large as `A:B:C`). */
export async function readRib(apiPort: number, family: "ipv4" | "ipv6"): Promise<Rib> {
  const { stdout } = await run("gobgp", ["-u", "127.0.0.1", "-p", String(apiPort), "global", "rib", "-a", family, "-j"]);
  const table = JSON.parse(stdout || "{}") as Record<string, { attrs: { type: number; communities?: number[]; value?: unknown }[] }[]>;
  const out: Rib = {};
  for (const [prefix, paths] of Object.entries(table)) {
    const attrs = paths[0]?.attrs ?? [];
    const standard = (attrs.find((a) => a.type === 8)?.communities ?? []).map((c) => `${c >>> 16}:${c & 0xffff}`);
    const large = ((attrs.find((a) => a.type === 32)?.value ?? []) as { ASN: number; LocalData1: number; LocalData2: number }[]).map(
      (l) => `${l.ASN}:${l.LocalData1}:${l.LocalData2}`,
    );
    out[prefix] = [...standard, ...large].sort();
  }
  return out;
}

/** Both families of GoBGP's RIB. */
export async function readRibs(apiPort: number): Promise<[Rib, Rib]> {
  return [await readRib(apiPort, "ipv4"), await readRib(apiPort, "ipv6")];
}

/** Routes arrive a few ms after Established and after each configure: polls until they match. */
export async function waitForRibs(apiPort: number, expected: [Rib, Rib], timeoutMs = 15_000): Promise<[Rib, Rib]> {
  const deadline = Date.now() + timeoutMs;
  let seen: [Rib, Rib] = [{}, {}];
  while (Date.now() < deadline) {
    seen = await readRibs(apiPort);
    if (JSON.stringify(seen) === JSON.stringify(expected)) return seen;
    await new Promise((r) => setTimeout(r, 100));
  }
  return seen;
}

/** What GoBGP should hold for `content`: every prefix with exactly its communities. */
export function expectedRibs(content: BundleContent): [Rib, Rib] {
  const of = (family: "v4" | "v6") => Object.fromEntries(content.prefixes[family].map(([p, c]) => [p, [...c].sort()]));
  return [of("v4"), of("v6")];
}

export interface BirdLab {
  bird: ChildProcess;
  gobgpd: ChildProcess;
  birdc: BirdClient;
  /** BIRD's BGP port on 127.0.0.1, GoBGP's on 127.0.0.2, GoBGP's API on 127.0.0.1. */
  birdPort: number;
  gobgpPort: number;
  apiPort: number;
  stop(): Promise<void>;
}

/**
 * BIRD in full mode on a bare `etc/bird.conf` (the agent writes the real one) with its socket in
 * `dir`, answering before this returns, and GoBGP peering with it: the router of the end-to-end tests.
 * `birdBin`: which BIRD (helpers/bird-versions.ts), by default the one on PATH.
 */
export async function startBirdLab(dir: string, etc: string, birdBin = "bird"): Promise<BirdLab> {
  const [birdPort, gobgpPort, apiPort] = [await freePort("127.0.0.1"), await freePort("127.0.0.2"), await freePort()];
  writeFileSync(join(etc, "bird.conf"), ["router id 127.0.0.1;", "protocol device {", "}", ""].join("\n"));
  const bird = await startBird({
    bin: birdBin,
    config: join(etc, "bird.conf"),
    socketPath: join(dir, "bird.ctl"),
    pidFile: join(dir, "bird.pid"),
    logFile: join(dir, "bird.out"),
  });
  const birdc = new BirdClient({ socketPath: join(dir, "bird.ctl"), timeoutMs: 5000 });
  const gobgpd = await startGobgp({ dir, port: gobgpPort, birdPort, apiPort });
  return {
    bird,
    gobgpd,
    birdc,
    birdPort,
    gobgpPort,
    apiPort,
    async stop() {
      birdc.close();
      await Promise.all([stopProcess(gobgpd), stopProcess(bird)]);
    },
  };
}
