// A real unbound serving DoH over h2c for tests, run by hand in a temp dir: a minimal
// unbound.conf with an auth-zone from a file, `local-zone: "." refuse` so
// nothing outside the zone is ever recursed, and a control socket for `auth_zone_reload`.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./lab-daemons.mjs";

const run = promisify(execFile);

export interface UnboundServer {
  /** `http://127.0.0.1:<port>/dns-query` (h2c only). */
  url: string;
  /** Replace the zone file and have unbound load it (`auth_zone_reload`). */
  reloadZone(zoneText: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The head of the example.test zone that the DoH tests serve: SOA, NS and the apex's
 * public-looking A and AAAA (1.2.3.4, 2606:4700::1111). Tests append their own names.
 */
export const EXAMPLE_ZONE_HEAD = `$ORIGIN example.test.
$TTL 300
@       IN SOA  ns.example.test. hostmaster.example.test. 1 3600 600 86400 60
@       IN NS   ns.example.test.
ns      IN A    1.2.3.53
@       IN A    1.2.3.4
@       IN AAAA 2606:4700::1111
`;

export interface StartUnboundOptions {
  zoneText: string;
  /** Default `example.test`. */
  zoneName?: string;
}

/** Path of a binary, looking in PATH and the sbin directories Debian installs daemons into. */
function findBinary(name: string): string | null {
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/local/sbin", "/sbin"];
  for (const dir of dirs) {
    if (dir === "") continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {}
  }
  return null;
}

/**
 * Why unbound tests cannot run here, or null when they can. In CI a missing unbound is an error
 * (thrown), so a broken image never passes by skipping.
 */
export function unboundMissing(): string | null {
  const missing = ["unbound", "unbound-control"].filter((name) => findBinary(name) === null);
  if (missing.length === 0) return null;
  const reason = `${missing.join(" and ")} not found (apt-get install -y --no-install-recommends unbound)`;
  // Same rule and output as tools.ts's tool(), which looks on PATH only; unbound lives in sbin.
  if (process.env.CI === "true") throw new Error(`CI=true and ${reason}`);
  process.stderr.write(`[skip] ${reason}\n`);
  return reason;
}

export async function startUnbound(options: StartUnboundOptions): Promise<UnboundServer> {
  const unbound = findBinary("unbound");
  const control = findBinary("unbound-control");
  if (!unbound || !control) throw new Error(unboundMissing() ?? "unbound not found");
  const zoneName = options.zoneName ?? "example.test";
  const dir = await mkdtemp(join(tmpdir(), "unbound-"));
  const zoneFile = join(dir, `${zoneName}.zone`);
  const confFile = join(dir, "unbound.conf");
  await writeFile(zoneFile, options.zoneText);

  // A port picked by the kernel can be taken again before unbound binds it: try a few.
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    await writeFile(confFile, config(dir, port, zoneName, zoneFile));
    try {
      const child = await launch(unbound, confFile, port, join(dir, "unbound.log"));
      return {
        url: `http://127.0.0.1:${port}/dns-query`,
        async reloadZone(zoneText) {
          await writeFile(zoneFile, zoneText);
          await run(control, ["-c", confFile, "auth_zone_reload", zoneName]);
        },
        async stop() {
          await terminate(child);
          await rm(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      lastError = err;
    }
  }
  await rm(dir, { recursive: true, force: true });
  throw lastError;
}

function config(dir: string, port: number, zoneName: string, zoneFile: string): string {
  return `server:
  username: ""
  chroot: ""
  directory: "${dir}"
  pidfile: "${dir}/unbound.pid"
  use-syslog: no
  logfile: "${dir}/unbound.log"
  verbosity: 1
  num-threads: 1
  # Without this a second instance could bind the same port and share its queries.
  so-reuseport: no
  interface: 127.0.0.1@${port}
  https-port: ${port}
  http-notls-downstream: yes
  http-endpoint: "/dns-query"
  access-control: 127.0.0.0/8 allow
  module-config: "iterator"
  local-zone: "." refuse
  local-zone: "${zoneName}." transparent

# auth-zone, not local-data: local-data does not follow CNAME chains.
auth-zone:
  name: "${zoneName}."
  zonefile: "${zoneFile}"
  for-downstream: yes
  for-upstream: yes
  fallback-enabled: no

remote-control:
  control-enable: yes
  control-interface: "${dir}/control.sock"
`;
}

async function launch(unbound: string, confFile: string, port: number, logFile: string): Promise<ChildProcess> {
  // -d keeps it in front, so the child is the daemon and killing it stops it.
  const child = spawn(unbound, ["-d", "-c", confFile], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<never>((_, reject) => {
    child.once("exit", async (code) => {
      const log = await readFile(logFile, "utf8").catch(() => "");
      reject(new Error(`unbound exited (${code}): ${stderr}${log}`.trim()));
    });
  });
  exited.catch(() => {});
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) await exited;
    if (await accepts(port)) return child;
    await Promise.race([exited, new Promise((r) => setTimeout(r, 25))]);
  }
  await terminate(child);
  throw new Error(`unbound did not listen on 127.0.0.1:${port} within 10 s`);
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
  await exited;
  clearTimeout(timer);
}
