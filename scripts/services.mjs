// Test prerequisites: PostgreSQL and NATS (started or reused), and the end-to-end tools
// (BIRD 2, GoBGP, unbound, promtool, Chromium for the console, zsh for rlctl's completion) installed with apt when missing and root is available.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const say = (m) => process.stdout.write(`[test setup] ${m}\n`);
const has = (bin) => spawnSync("sh", ["-c", `command -v ${bin}`], { stdio: "ignore" }).status === 0;
const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

export function portOpen(host, port, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const s = connect({ host, port });
    const done = (ok) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(timeoutMs, () => done(false));
    s.once("connect", () => done(true));
    s.once("error", () => done(false));
  });
}

async function waitPort(host, port, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await portOpen(host, port, 500)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

const APT_TOOLS = [
  { bins: ["bird", "birdc"], pkg: "bird2" },
  { bins: ["gobgpd", "gobgp"], pkg: "gobgpd" },
  { bins: ["bgpq4"], pkg: "bgpq4" },
  { bins: ["unbound", "unbound-control"], pkg: "unbound" },
  { bins: ["promtool"], pkg: "prometheus" },
  { bins: ["chromium"], pkg: "chromium" },
  { bins: ["zsh"], pkg: "zsh" },
];

/** Installs the missing end-to-end tools in one apt run; tests skip (or fail in CI) without them. */
export function ensureAptTools() {
  const missing = APT_TOOLS.filter((t) => t.bins.some((b) => !has(b))).map((t) => t.pkg);
  if (!missing.length) return;
  if (!isRoot() || !has("apt-get")) {
    say(`missing ${missing.join(", ")} and cannot install them (not root or no apt): their tests will be skipped`);
    return;
  }
  say(`installing ${missing.join(", ")} with apt-get…`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  const r = spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...missing], { stdio: "inherit", env });
  if (r.status !== 0) say(`apt-get install failed (exit ${r.status}); the tests that need ${missing.join(", ")} will say so`);
}

/** PostgreSQL: TEST_DATABASE_URL, else 127.0.0.1:5432, else start the machine's cluster, else a private one. */
export async function ensurePostgres() {
  if (process.env.TEST_DATABASE_URL) return process.env.TEST_DATABASE_URL;
  const url = "postgres://postgres@127.0.0.1:5432/postgres";
  if (await portOpen("127.0.0.1", 5432)) return url;
  if (existsSync("/etc/postgresql") && has("pg_ctlcluster")) {
    for (const version of readdirSync("/etc/postgresql")) {
      say(`starting PostgreSQL ${version} (pg_ctlcluster)…`);
      spawnSync("pg_ctlcluster", ["--skip-systemctl-redirect", version, "main", "start"], { stdio: "inherit" });
    }
    if (await waitPort("127.0.0.1", 5432, 15000)) return url;
  }
  return startPrivatePostgres();
}

async function startPrivatePostgres() {
  const bin = ["/usr/lib/postgresql"]
    .flatMap((d) => (existsSync(d) ? readdirSync(d).map((v) => join(d, v, "bin")) : []))
    .find((d) => existsSync(join(d, "initdb")));
  if (!bin) throw new Error("no PostgreSQL found: set TEST_DATABASE_URL or install postgresql");
  const dir = join(tmpdir(), `rlc-pg-${process.pid}`);
  const port = 55432;
  mkdirSync(dir, { recursive: true });
  say(`starting a private PostgreSQL in ${dir} on port ${port}…`);
  // initdb refuses root: run it as the postgres user (peers/README.md).
  const asPg = isRoot() ? ["runuser", "-u", "postgres", "--"] : [];
  spawnSync("chown", ["postgres", dir]);
  const init = spawnSync(
    asPg[0] ?? join(bin, "initdb"),
    [...asPg.slice(1), ...(asPg.length ? [join(bin, "initdb")] : []), "-D", join(dir, "data"), "-U", "postgres", "--auth=trust"],
    { stdio: "inherit" },
  );
  if (init.status !== 0) throw new Error("initdb failed");
  const ctl = [
    join(bin, "pg_ctl"),
    "-D",
    join(dir, "data"),
    "-w",
    "-l",
    join(dir, "log"),
    "-o",
    `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off`,
    "start",
  ];
  const started = spawnSync(asPg[0] ?? ctl[0], [...asPg.slice(1), ...(asPg.length ? ctl : ctl.slice(1))], { stdio: "inherit" });
  if (started.status !== 0) throw new Error("pg_ctl start failed");
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

/** NATS with JetStream: TEST_NATS_URL, else 127.0.0.1:4222, else start nats-server. */
export async function ensureNats() {
  if (process.env.TEST_NATS_URL) return process.env.TEST_NATS_URL;
  const url = "nats://127.0.0.1:4222";
  if (await portOpen("127.0.0.1", 4222)) return url;
  if (!has("nats-server") && isRoot() && has("apt-get")) {
    spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "nats-server"], { stdio: "inherit" });
  }
  if (!has("nats-server")) {
    say("no NATS and no nats-server: NATS tests will be skipped (or fail with CI=true)");
    return "";
  }
  const dir = join(tmpdir(), `rlc-nats-${process.pid}`);
  mkdirSync(dir, { recursive: true });
  say("starting nats-server on 127.0.0.1:4222…");
  spawnSync("sh", ["-c", `nohup nats-server -a 127.0.0.1 -p 4222 -js -sd ${dir} > ${dir}/nats.log 2>&1 &`], { stdio: "ignore" });
  return (await waitPort("127.0.0.1", 4222, 10000)) ? url : "";
}
