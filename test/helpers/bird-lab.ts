import { type ChildProcess, execFile, spawn } from "node:child_process";
import { openSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { BirdClient } from "../../packages/agent/src/bird/birdc.js";
import { createServer } from "node:net";
import { promisify } from "node:util";
import type { BundleContent } from "../../packages/shared/src/bundle/index.js";

// Pieces for tests that run a real BIRD speaking BGP to a real GoBGP on loopback.

const run = promisify(execFile);

export type Rib = Record<string, string[]>;

/** A port free on `host` right now (the kernel picks it). */
export function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** Starts a daemon in front (its own child), output to `logFile`. */
export function startProcess(bin: string, args: string[], logFile: string, env?: NodeJS.ProcessEnv): ChildProcess {
  const log = openSync(logFile, "a");
  const child = spawn(bin, args, { stdio: ["ignore", log, log], env: env ?? process.env });
  child.on("error", (error) => console.error(`${bin}: ${error.message}`));
  return child;
}

/** SIGTERM to this one process (by pid), SIGKILL after 5 s; resolves once it exited. */
export async function stopProcess(child: ChildProcess | null): Promise<void> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  process.kill(child.pid, "SIGTERM");
  const timer = setTimeout(() => child.pid && child.exitCode === null && process.kill(child.pid, "SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

/** gobgpd.toml for one IPv4+IPv6 neighbour: BIRD on 127.0.0.1:`birdPort`, GoBGP on 127.0.0.2:`port`. */
export function gobgpdConfig(port: number, birdPort: number, localAs = 65000, peerAs = 65001): string {
  return [
    "[global.config]",
    `  as = ${peerAs}`,
    '  router-id = "127.0.0.2"',
    `  port = ${port}`,
    '  local-address-list = ["127.0.0.2"]',
    "[[neighbors]]",
    "  [neighbors.config]",
    '    neighbor-address = "127.0.0.1"',
    `    peer-as = ${localAs}`,
    "  [neighbors.timers.config]",
    "    connect-retry = 1",
    "  [neighbors.transport.config]",
    '    local-address = "127.0.0.2"',
    `    remote-port = ${birdPort}`,
    "  [neighbors.ebgp-multihop.config]",
    "    enabled = true",
    "    multihop-ttl = 2",
    "  [[neighbors.afi-safis]]",
    "    [neighbors.afi-safis.config]",
    '      afi-safi-name = "ipv4-unicast"',
    "  [[neighbors.afi-safis]]",
    "    [neighbors.afi-safis.config]",
    '      afi-safi-name = "ipv6-unicast"',
    "",
  ].join("\n");
}

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
 */
export async function startBirdLab(dir: string, etc: string): Promise<BirdLab> {
  const [birdPort, gobgpPort, apiPort] = [await freePort("127.0.0.1"), await freePort("127.0.0.2"), await freePort()];
  writeFileSync(join(etc, "bird.conf"), ["router id 127.0.0.1;", "protocol device {", "}", ""].join("\n"));
  const bird = startProcess("bird", ["-f", "-c", join(etc, "bird.conf"), "-s", join(dir, "bird.ctl"), "-P", join(dir, "bird.pid")], join(dir, "bird.out"));
  const birdc = new BirdClient({ socketPath: join(dir, "bird.ctl"), timeoutMs: 5000 });
  const deadline = Date.now() + 10_000;
  while (!(await birdc.command("show status").then(() => true, () => false))) {
    if (Date.now() > deadline || bird.exitCode !== null) throw new Error(`BIRD did not start: ${readFileSync(join(dir, "bird.out"), "utf8")}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  writeFileSync(join(dir, "gobgpd.toml"), gobgpdConfig(gobgpPort, birdPort));
  const gobgpd = startProcess("gobgpd", ["-f", join(dir, "gobgpd.toml"), `--api-hosts=127.0.0.1:${apiPort}`, "--pprof-disable", "-p"], join(dir, "gobgpd.log"));
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
