import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { BirdClient } from "../../packages/shared/src/bird/birdc.js";
import { loadBuildInfo } from "../../packages/shared/src/version.js";
import { birdRoots } from "../../scripts/bird-roots.mjs";
import { debianVersion } from "../../scripts/version.mjs";
import { type Rib, startBirdLab, stopProcess, waitForRibs } from "../helpers/bird-lab.js";
import { type LiveController, startLiveController, until, untilJobDone } from "../helpers/live-controller.js";

// What an operator does on a router: `npm run package`'s amd64 .deb installed with dpkg, the agent
// run as /usr/bin/rl-agent on a PATH without node, against a live controller, real BIRD and GoBGP;
// then removed and purged (the arm64 .deb is inspected with dpkg-deb and file). It changes the machine (a package, a system user), so it needs root;
// outside CI it is skipped with the reason, with CI=true a missing precondition fails it.

const root = join(import.meta.dirname, "../..");
// The version the build takes from the repository's tags (packages/shared/src/version.ts).
const version = loadBuildInfo(new URL("../../packages/agent/", import.meta.url)).version;
const debFile = join(root, "dist/packages", `rl-agent_${debianVersion(version)}_amd64.deb`);
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

function preconditions(): string[] {
  const reasons: string[] = [];
  if (process.getuid?.() !== 0) reasons.push("not root (dpkg -i changes the machine)");
  if (process.arch !== "x64" || process.platform !== "linux") reasons.push(`not linux/x64 (${process.platform}/${process.arch})`);
  for (const bin of ["dpkg-deb", "dpkg", "file", "bird", "birdc", "gobgpd", "gobgp"]) {
    if (spawnSync("sh", ["-c", `command -v ${bin}`], { stdio: "ignore" }).status !== 0) reasons.push(`${bin} is not installed`);
  }
  if (reasons.length > 0 && process.env.CI === "true") throw new Error(`CI=true and the package test cannot run: ${reasons.join("; ")}`);
  if (reasons.length > 0) process.stderr.write(`[skip] package install test: ${reasons.join("; ")}\n`);
  return reasons;
}

const reasons = preconditions();
const title = "rl-agent .deb: built, installed with dpkg, runs without node, removed and purged";

/** dpkg runs triggers (man-db) for tens of seconds: asynchronously, so vitest's worker stays responsive. */
function dpkg(args: string[]): Promise<{ status: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn("dpkg", args, { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.on("close", (status) => resolve({ status, out }));
  });
}

function sh(cmd: string, args: string[], env?: NodeJS.ProcessEnv) {
  const r = spawnSync(cmd, args, { encoding: "utf8", env: env ?? process.env, timeout: 120_000 });
  return { status: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}`, stdout: r.stdout ?? "" };
}

describe.skipIf(reasons.length > 0)(reasons.length > 0 ? `${title} (skipped: ${reasons.join("; ")})` : title, () => {
  let dir = "";
  let etc = "";
  let noNodePath = "";
  let bird: ChildProcess | null = null;
  let gobgpd: ChildProcess | null = null;
  let agent: ChildProcess | null = null;
  let agentLog = "";
  let birdc: BirdClient;
  let t: LiveController;
  let apiPort = 0;
  let birdPort = 0;
  let gobgpPort = 0;
  const buildSeconds = { package: 0 };

  const ok = async (method: "GET" | "POST", url: string, payload?: object, status?: number) => {
    const res = await t.call(t.rootKey, method, url, payload);
    if (status ? res.statusCode !== status : res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };

  const agentEnv = (extra: Record<string, string> = {}) => ({
    PATH: noNodePath,
    RL_STATE_DIR: join(dir, "state"),
    BIRD_CONTROL_SOCKET: join(dir, "bird.ctl"),
    BIRD_CONFIG_PATH: join(etc, "bird.conf"),
    RL_BIRD_MODE: "full",
    RL_METRICS_LISTEN: "off",
    ...extra,
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "rl-package-"));
    etc = join(dir, "etc");
    mkdirSync(etc);
    // A PATH with BIRD and nothing else: no node, no npm, no shell tools.
    noNodePath = join(dir, "bin");
    mkdirSync(noNodePath);
    for (const bin of ["bird", "birdc"]) symlinkSync(sh("sh", ["-c", `command -v ${bin}`]).stdout.trim(), join(noNodePath, bin));

    // The workspaces are built by `npm test` before any test runs; this times the package step alone.
    const started = Date.now();
    // Asynchronously: a synchronous minute-long child would starve vitest's worker of its event loop.
    const built = await new Promise<{ status: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, [join(root, "scripts/package.mjs"), "--skip-build", "--no-lintian"], { stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      child.stdout.on("data", (c: Buffer) => {
        out += c.toString();
      });
      child.stderr.on("data", (c: Buffer) => {
        out += c.toString();
      });
      child.on("close", (status) => resolve({ status, out }));
    });
    buildSeconds.package = (Date.now() - started) / 1000;
    if (built.status !== 0) throw new Error(`npm run package failed:\n${built.out}`);
    process.stderr.write(`[package] npm run package --skip-build: ${buildSeconds.package.toFixed(1)} s\n${built.out}`);

    ({ bird, gobgpd, birdc, birdPort, gobgpPort, apiPort } = await startBirdLab(dir, etc));
    t = await startLiveController({ env: { NATS_URL: natsUrl } });
  }, 600_000);

  afterAll(async () => {
    if (t) {
      for (const job of (await t.call(t.rootKey, "GET", "/v1/jobs?status=running")).json().items ?? [])
        await t.call(t.rootKey, "POST", `/v1/jobs/${job.job_id}/cancel`);
    }
    await stopProcess(agent);
    birdc?.close();
    await t?.close();
    await Promise.all([stopProcess(gobgpd), stopProcess(bird)]);
    // Never leave the package on the machine, whatever failed.
    await dpkg(["-P", "rl-agent"]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 180_000);

  it("dpkg -i installs the executable, the unit, a commented agent.env (conffile), the user and /var/lib/rl-agent", async () => {
    await dpkg(["-P", "rl-agent"]);
    const installed = await dpkg(["-i", debFile]);
    expect(installed.status, installed.out).toBe(0);
    expect(statSync("/usr/bin/rl-agent").mode & 0o111).toBeTruthy();
    expect(existsSync("/lib/systemd/system/rl-agent.service")).toBe(true);
    expect(existsSync("/usr/share/doc/rl-agent/LICENSE") && existsSync("/usr/share/doc/rl-agent/README.md")).toBe(true);
    const env = readFileSync("/etc/rl-agent/agent.env", "utf8");
    for (const name of ["RL_CONTROLLER_URL", "RL_ENROLLMENT_TOKEN", "RL_STATE_DIR", "BIRD_CONTROL_SOCKET", "RL_LOG_LEVEL"]) expect(env).toContain(`#${name}=`);
    expect(sh("dpkg-query", ["--control-show", "rl-agent", "conffiles"]).stdout).toContain("/etc/rl-agent/agent.env");
    expect(sh("getent", ["passwd", "rl-agent"]).status).toBe(0);
    const state = statSync("/var/lib/rl-agent");
    expect(state.isDirectory() && (state.mode & 0o777) === 0o700).toBe(true);
  }, 180_000);

  it("/usr/bin/rl-agent runs where node is not on PATH: --help exits 0 and lists the variables", () => {
    expect(spawnSync("node", ["--version"], { env: { PATH: noNodePath } }).error).toMatchObject({ code: "ENOENT" });
    const help = sh("/usr/bin/rl-agent", ["--help"], { PATH: noNodePath });
    expect(help.status, help.out).toBe(0);
    expect(help.stdout).toContain("RL_CONTROLLER_URL");
    expect(help.stdout).toContain("RL_POLL_SECONDS");
    expect(sh("/usr/bin/rl-agent", ["--version"], { PATH: noNodePath }).stdout.trim()).toBe(version);
  });

  it("/usr/bin/rl-agent embeds Node 24 LTS, not the building machine's Node", () => {
    // NODE_OPTIONS reaches a single executable's Node: a preloaded file prints its version and exits.
    const probe = join(dir, "node-version.cjs");
    writeFileSync(probe, "process.stdout.write(process.version); process.exit(0);\n");
    const shown = sh("/usr/bin/rl-agent", ["--version"], { PATH: noNodePath, NODE_OPTIONS: `--require ${probe}` });
    expect(shown.stdout).toMatch(/^v24\.\d+\.\d+$/);
  });

  const trixie = birdRoots().find((r) => r.version);
  const noTrixie = process.env.CI === "true" ? "" : trixie ? "" : " (skipped: no Debian 13 root; npm test makes it as root)";
  it.skipIf(Boolean(noTrixie))(`the amd64 executable runs on Debian 13 too (a trixie root's libc)${noTrixie}`, () => {
    if (!trixie) throw new Error("CI=true and no Debian 13 root (scripts/bird-roots.mjs)");
    // The root sees this machine's /tmp at the same path: the package's files unpacked there run inside it.
    const tree = mkdtempSync(join(tmpdir(), "rl-package-trixie-"));
    try {
      expect(sh("dpkg-deb", ["-x", debFile, tree]).status).toBe(0);
      const probe = join(tree, "node-version.cjs");
      writeFileSync(probe, "process.stdout.write(process.version); process.exit(0);\n");
      const env = { PATH: "/usr/bin:/bin" };
      // Through the root's BIRD wrapper's mounts: they are in place once a BIRD of that root has run.
      sh(join(trixie.bin, "bird"), ["--version"]);
      expect(sh("/usr/sbin/chroot", [trixie.root, join(tree, "usr/bin/rl-agent"), "--version"], env).stdout.trim()).toBe(version);
      expect(sh("/usr/sbin/chroot", [trixie.root, "env", `NODE_OPTIONS=--require ${probe}`, join(tree, "usr/bin/rl-agent"), "--version"], env).stdout).toMatch(
        /^v24\./,
      );
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it("the arm64 .deb carries an aarch64 executable of the same agent, its control naming arm64", () => {
    const armDeb = join(root, "dist/packages", `rl-agent_${debianVersion(version)}_arm64.deb`);
    expect(sh("dpkg-deb", ["--field", armDeb, "Package", "Architecture", "Version"]).stdout).toBe(
      `Package: rl-agent\nArchitecture: arm64\nVersion: ${debianVersion(version)}\n`,
    );
    const tree = join(dir, "arm64");
    expect(sh("dpkg-deb", ["-x", armDeb, tree]).status).toBe(0);
    expect(sh("file", ["-b", join(tree, "usr/bin/rl-agent")]).stdout).toMatch(/^ELF 64-bit LSB .*ARM aarch64/);
    expect(sh("file", ["-b", join(root, "dist/packages/rl-agent-linux-arm64")]).stdout).toMatch(/^ELF 64-bit LSB .*ARM aarch64/);
    expect(existsSync(join(tree, "lib/systemd/system/rl-agent.service")) && existsSync(join(tree, "etc/rl-agent/agent.env"))).toBe(true);
  });

  it("the packaged agent enrolls, applies a revision to BIRD (GoBGP holds its routes) and status says in sync", async () => {
    const speaker = await ok("POST", "/v1/speakers", {
      name: "edge-package",
      mode: "remote",
      router_id: "127.0.0.1",
      asn: 65000,
      policies_json: { local_ip: "127.0.0.1", local_port: birdPort, next_hop_ipv4: "198.51.100.254", next_hop_ipv6: "2001:db8::254" },
    });
    agent = spawn("/usr/bin/rl-agent", ["run"], {
      cwd: dir,
      // As an operator sets it up: the controller's agents' HTTPS listener and the token, whose
      // CA hash is all the agent trusts (no RL_INSECURE, no CA file).
      env: agentEnv({ RL_CONTROLLER_URL: t.nodeUrl, RL_ENROLLMENT_TOKEN: speaker.enrollment_token, RL_LOG_LEVEL: "info" }),
      stdio: ["ignore", "ignore", "pipe"],
    });
    agent.stderr?.on("data", (chunk: Buffer) => {
      agentLog += chunk.toString();
    });
    await until("the packaged agent to enroll", async () => (await ok("GET", `/v1/speakers/${speaker.id}`)).enrolled_at, 60_000);
    // The version the build took from the tags is the one the agent reports.
    expect((await ok("GET", `/v1/speakers/${speaker.id}`)).agent_version).toBe(version);

    const gobgp = await ok("POST", "/v1/peers", {
      name: "gobgp",
      neighbor_address: "127.0.0.2",
      neighbor_port: gobgpPort,
      remote_asn: 65001,
      multihop: true,
      speaker_ids: [speaker.id],
    });
    await untilJobDone(t, gobgp.reconcile_job_id);
    const community = await ok("POST", "/v1/communities", { community: "65000:100", title: "via-vpn" });
    const module = await ok("POST", "/v1/modules", { name: "vpn", type: "IP_RANGES", community_id: community.id });
    for (const cidr of ["11.1.0.0/16", "2a00:1::/32"]) await ok("POST", `/v1/modules/${module.id}/ip-range-entries`, { cidr }, 201);
    const refreshed = await ok("POST", "/v1/modules/refresh?wait=true");
    expect(refreshed.status, JSON.stringify(refreshed)).toBe("succeeded");

    const accepted = await ok("POST", "/v1/apply", { timeout_seconds: 60 }, 202);
    const job = await untilJobDone(t, accepted.job_id, 70_000);
    expect(job, agentLog).toMatchObject({ status: "succeeded", result: { revision_id: refreshed.result.revision_id } });
    const expected: [Rib, Rib] = [{ "11.1.0.0/16": ["65000:100"] }, { "2a00:1::/32": ["65000:100"] }];
    expect(await waitForRibs(apiPort, expected, 30_000)).toEqual(expected);
    // pino's shape, as the controller writes it.
    expect(agentLog).toMatch(/"level":30,"time":\d+/);

    const status = sh("/usr/bin/rl-agent", ["status", "--json"], agentEnv());
    expect(status.status, status.out).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ enrolled: true, applied: { revision_id: refreshed.result.revision_id } });
  }, 180_000);

  it("dpkg -r stops using the binary but keeps state and config; dpkg -P removes them and the user", async () => {
    await stopProcess(agent);
    writeFileSync("/var/lib/rl-agent/node.json", "{}");
    const removed = await dpkg(["-r", "rl-agent"]);
    expect(removed.status, removed.out).toBe(0);
    expect(existsSync("/usr/bin/rl-agent")).toBe(false);
    expect(existsSync("/var/lib/rl-agent/node.json")).toBe(true);
    expect(existsSync("/etc/rl-agent/agent.env")).toBe(true);

    const purged = await dpkg(["-P", "rl-agent"]);
    expect(purged.status, purged.out).toBe(0);
    expect(existsSync("/var/lib/rl-agent")).toBe(false);
    expect(existsSync("/etc/rl-agent")).toBe(false);
    expect(sh("getent", ["passwd", "rl-agent"]).status).not.toBe(0);
  }, 180_000);
});
