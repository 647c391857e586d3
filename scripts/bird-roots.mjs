// The BIRD versions the routers of the field run, beside the machine's own: Debian 13's bird2
// (2.17) and bird3 (3.1), each installed in a trixie root made with debootstrap, and run through
// thin `bird`/`birdc`/`birdcl` wrappers that chroot into it, with /tmp, /run/bird and /proc
// bind-mounted at the same paths so sockets and config files are where the tests put them. The roots are made once and cached outside the repository; the real-BIRD tests find
// them through test/helpers/bird-versions.ts.
import { spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const say = (m) => process.stdout.write(`[test setup] ${m}\n`);
const has = (bin) => spawnSync("sh", ["-c", `command -v ${bin}`], { stdio: "ignore" }).status === 0;
const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0;

/** Where the roots live: RLC_BIRD_ROOTS, else ~/.cache/route-list-controller/bird. */
export const birdRootsDir = () => process.env.RLC_BIRD_ROOTS ?? join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "route-list-controller", "bird");

/** The Debian 13 packages the matrix runs; `series` is what the tests name them by. */
export const DEBIAN_BIRDS = [
  { pkg: "bird2", series: "2.17" },
  { pkg: "bird3", series: "3.1" },
];

const MIRROR = process.env.RLC_DEBIAN_MIRROR ?? "http://deb.debian.org/debian";

/** The paths inside a root that BIRD's files and sockets live in: bind-mounted at the same paths. */
const BIND = ["/tmp", "/run/bird", "/proc"];

/** The wrapper for one tool: mounts what is missing (under a lock), then becomes BIRD in the root, in the same directory. */
function wrapper(root, tool) {
  return [
    "#!/bin/sh",
    `# ${tool} from ${root} (made by scripts/bird-roots.mjs). exec keeps the PID, so a test's SIGTERM reaches BIRD.`,
    `root='${root}'`,
    `flock "$root/.mount.lock" sh -c 'for d in ${BIND.join(" ")}; do mountpoint -q "$0$d" || { mkdir -p "$d" "$0$d" && mount --bind "$d" "$0$d"; } || exit 1; done' "$root" || exit 1`,
    `exec chroot "$root" /bin/sh -c 'cd "$0" 2>/dev/null || cd /; exec /usr/sbin/${tool} "$@"' "$PWD" "$@"`,
    "",
  ].join("\n");
}

/** The marker a finished root carries: the BIRD version it holds. */
const readyFile = (root) => join(root, ".rlc-ready");

/** `{ pkg, series, root, bin, version }` for each root already made (bin: the wrappers' directory). */
export function birdRoots() {
  return DEBIAN_BIRDS.map((d) => {
    const root = join(birdRootsDir(), `trixie-${d.pkg}`);
    const version = existsSync(readyFile(root)) ? readFileSync(readyFile(root), "utf8").trim() : "";
    return { ...d, root, bin: join(root, ".rlc-bin"), version };
  });
}

const run = (cmd, args, env) => {
  const r = spawnSync(cmd, args, { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive", ...env } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(" ")} failed (exit ${r.status}): ${String(r.stderr).slice(-500)}`);
};

/** Unmounts whatever the wrappers bound into `root`, so that deleting it cannot reach the host. */
function unmountAll(root) {
  for (const d of BIND) spawnSync("umount", ["-l", join(root, d)], { stdio: "ignore" });
}

/**
 * Makes the roots that are missing (debootstrap once, then a copy per package): about a minute
 * the first time, nothing after. Needs root, apt and the network; without them it says why and
 * the tests of those versions skip (or fail with CI=true).
 */
export function ensureBirdRoots() {
  const missing = birdRoots().filter((r) => !r.version);
  if (!missing.length) return;
  if (!isRoot() || !has("apt-get")) {
    say(`no BIRD ${missing.map((r) => r.series).join("/")} root and cannot make one (not root or no apt): their tests will be skipped`);
    return;
  }
  try {
    if (!has("debootstrap")) {
      run("apt-get", ["update", "-qq"]);
      run("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "debootstrap"]);
    }
    const base = join(birdRootsDir(), "trixie-base");
    if (!existsSync(join(base, ".rlc-base"))) {
      say(`making a Debian 13 root for BIRD ${missing.map((r) => r.series).join(" and ")} in ${birdRootsDir()} (about a minute, once)…`);
      rmSync(base, { recursive: true, force: true });
      mkdirSync(base, { recursive: true });
      run("debootstrap", ["--variant=minbase", "trixie", base, MIRROR]);
      // Package scripts must not try to start services inside the root.
      writeFileSync(join(base, "usr/sbin/policy-rc.d"), "#!/bin/sh\nexit 101\n");
      chmodSync(join(base, "usr/sbin/policy-rc.d"), 0o755);
      run("chroot", [base, "apt-get", "update", "-qq"]);
      writeFileSync(join(base, ".rlc-base"), "");
    }
    for (const r of missing) {
      unmountAll(r.root);
      rmSync(r.root, { recursive: true, force: true });
      run("cp", ["-a", base, r.root]); // -a: the root holds device nodes
      run("chroot", [r.root, "apt-get", "install", "-y", "-qq", "--no-install-recommends", r.pkg]);
      run("chroot", [r.root, "apt-get", "clean"]);
      mkdirSync(r.bin, { recursive: true });
      for (const tool of ["bird", "birdc", "birdcl"]) {
        writeFileSync(join(r.bin, tool), wrapper(r.root, tool));
        chmodSync(join(r.bin, tool), 0o755);
      }
      const shown = spawnSync(join(r.bin, "bird"), ["--version"], { encoding: "utf8" });
      const version = /BIRD version (\S+)/.exec(`${shown.stdout}${shown.stderr}`)?.[1];
      if (!version) throw new Error(`BIRD in ${r.root} does not answer --version: ${shown.stderr}`);
      writeFileSync(readyFile(r.root), `${version}\n`);
      say(`BIRD ${version} ready in ${r.root}`);
    }
    rmSync(base, { recursive: true, force: true });
  } catch (err) {
    say(`could not make the BIRD roots: ${err.message}; the tests of those versions will be skipped (or fail with CI=true)`);
  }
}
