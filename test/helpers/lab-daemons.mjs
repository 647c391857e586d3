// Starting and stopping BIRD and GoBGP on loopback, shared by the end-to-end tests
// (bird-lab.ts) and the benchmarks (bench/*.mjs): plain JavaScript, so that both can import it.
import { spawn } from "node:child_process";
import { openSync, readFileSync } from "node:fs";
import { connect, createServer } from "node:net";

/**
 * A port free on `host` right now, below the kernel's ephemeral range (32768–60999 here): a port
 * the kernel picked from that range could be taken, before the daemon binds it, as the source
 * port of any connection the busy suite opens meanwhile (a BIRD that cannot listen leaves its
 * session down). Tried at random among 20000–32767 until one binds.
 * @param {string} [host]
 * @returns {Promise<number>}
 */
export async function freePort(host = "127.0.0.1") {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 12768);
    const free = await new Promise((resolve, reject) => {
      const server = createServer();
      server.once("error", (error) => (error.code === "EADDRINUSE" || error.code === "EACCES" ? resolve(false) : reject(error)));
      server.listen(port, host, () => server.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/**
 * Starts a daemon in front (its own child), output to `logFile`.
 * @param {string} bin
 * @param {string[]} args
 * @param {string} logFile
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {import("node:child_process").ChildProcess}
 */
export function startProcess(bin, args, logFile, env) {
  const log = openSync(logFile, "a");
  const child = spawn(bin, args, { stdio: ["ignore", log, log], env: env ?? process.env });
  child.on("error", (error) => console.error(`${bin}: ${error.message}`));
  return child;
}

/**
 * SIGTERM to this one process (by pid), SIGKILL after 5 s; resolves once it exited.
 * @param {import("node:child_process").ChildProcess | null} child
 */
export async function stopProcess(child) {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", () => resolve(undefined)));
  process.kill(child.pid, "SIGTERM");
  const timer = setTimeout(() => child.pid && child.exitCode === null && process.kill(child.pid, "SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

/** True once BIRD greets on its control socket (`0001 BIRD … ready.`). */
function birdGreets(socketPath) {
  return new Promise((resolve) => {
    const socket = connect(socketPath);
    socket.setTimeout(1000, () => socket.destroy());
    socket.once("data", (data) => {
      socket.destroy();
      resolve(/^0001 /.test(String(data)));
    });
    socket.once("error", () => resolve(false));
    socket.once("close", () => resolve(false));
  });
}

/**
 * BIRD in front on `config`, its control socket at `socketPath`, answering before this returns;
 * `bin` is the `bird` to run (default: the one on PATH).
 * @param {{ bin?: string, config: string, socketPath: string, pidFile: string, logFile: string, timeoutMs?: number }} o
 */
export async function startBird(o) {
  const bird = startProcess(o.bin ?? "bird", ["-f", "-c", o.config, "-s", o.socketPath, "-P", o.pidFile], o.logFile);
  const deadline = Date.now() + (o.timeoutMs ?? 10_000);
  while (!(await birdGreets(o.socketPath))) {
    if (Date.now() > deadline || bird.exitCode !== null) {
      await stopProcess(bird);
      throw new Error(`BIRD did not start: ${readFileSync(o.logFile, "utf8")}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return bird;
}

/**
 * gobgpd.toml for one IPv4+IPv6 neighbour: BIRD on 127.0.0.1:`birdPort`, GoBGP on 127.0.0.2:`port`.
 * @param {number} port
 * @param {number} birdPort
 */
export function gobgpdConfig(port, birdPort, localAs = 65000, peerAs = 65001) {
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

/**
 * gobgpd in front on `dir/gobgpd.toml`, its API on 127.0.0.1:`apiPort`.
 * @param {{ dir: string, port: number, birdPort: number, apiPort: number }} o
 */
export async function startGobgp(o) {
  const { writeFileSync } = await import("node:fs");
  const { join } = await import("node:path");
  writeFileSync(join(o.dir, "gobgpd.toml"), gobgpdConfig(o.port, o.birdPort));
  return startProcess("gobgpd", ["-f", join(o.dir, "gobgpd.toml"), `--api-hosts=127.0.0.1:${o.apiPort}`, "--pprof-disable", "-p"], join(o.dir, "gobgpd.log"));
}
