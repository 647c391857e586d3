#!/usr/bin/env node
// `npm run package`: the agent as routers take it, under dist/packages/, for x64 and arm64:
//   rl-agent-linux-<x64|arm64>          one executable (Node's single executable application): Node
//                                       24 LTS (scripts/node-dist.mjs) with the agent bundled into it,
//                                       agent.proto and libsodium included, so the router needs no
//                                       Node (Debian 12's nodejs is too old anyway);
//   rl-agent_<version>_<amd64|arm64>.deb that executable as /usr/bin/rl-agent, its systemd unit, a
//                                       commented /etc/rl-agent/agent.env, a system user and
//                                       /var/lib/rl-agent.
// Only Node, npm's own dependencies (esbuild, postject), the registry's node-linux-* packages and
// dpkg-deb: no packaging tool to install. `--skip-build` reuses the workspaces' dist/ (npm test
// has built them); `--no-lintian` skips Debian's lintian, which otherwise runs (and must pass)
// where it is installed; `--arch=x64` or `--arch=arm64` builds one architecture.
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { ensureBuilt, ensureInstalled, mustRun, root } from "./lib.mjs";
import { EMBEDDED_NODE, nodeBinary } from "./node-dist.mjs";
import { debianChangelog, debianControl, debianScripts, envFileText, LINTIAN_OVERRIDES, manPage } from "./package-deb.mjs";
import { debianVersion } from "./version.mjs";

const args = new Set(process.argv.slice(2));
const outDir = join(root, "dist", "packages");
const work = join(root, "dist", "package-work");
// What `rl-agent --version` and its reports say, by the agent's own rule (shared's version.ts,
// read once the build is there): from the repository's tags.
let version = "";
let debVersion = "";
/** Each architecture as Node, Debian and `file` name it. */
const ARCHES = { x64: { node: "x64", deb: "amd64", elf: "x86-64" }, arm64: { node: "arm64", deb: "arm64", elf: "ARM aarch64" } };
const only = [...args].find((a) => a.startsWith("--arch="))?.slice("--arch=".length);
const targets = Object.values(ARCHES).filter((a) => !only || a.node === only);
if (!(process.arch in ARCHES) || process.platform !== "linux" || targets.length === 0) {
  process.stderr.write(`npm run package builds on Linux x64 or arm64, for x64 and/or arm64 (this is ${process.platform}/${process.arch}, --arch=${only})\n`);
  process.exit(1);
}

const t0 = Date.now();
function step(what) {
  process.stdout.write(`package: [${((Date.now() - t0) / 1000).toFixed(1)} s] ${what}\n`);
}

/** The agent and everything it imports as one CommonJS file (what a single executable runs). */
async function bundle(file) {
  const require = createRequire(import.meta.url);
  const esbuild = require("esbuild");
  const proto = readFileSync(join(root, "packages/proto/agent.proto"), "utf8");
  const result = await esbuild.build({
    entryPoints: [join(root, "packages/agent/dist/main.js")],
    outfile: file,
    bundle: true,
    platform: "node",
    target: "node24",
    format: "cjs",
    // The sources read these from disk beside their package; the executable has no package.
    define: { __RL_AGENT_PROTO__: JSON.stringify(proto), __RL_AGENT_VERSION__: JSON.stringify(version) },
    // CommonJS exports first: libsodium-wrappers' ESM build is broken (see shared's bundle/sign.ts).
    mainFields: ["main", "module"],
    conditions: ["require", "node"],
    legalComments: "none",
    logLevel: "error",
    logOverride: { "empty-import-meta": "silent" },
    metafile: false,
  });
  if (result.errors.length > 0) process.exit(1);
}

/** The blob Node's single executable application runs, made by the embedded Node itself (no code cache: one blob fits both architectures). */
function seaBlob(bundleFile) {
  const blob = join(work, "sea-prep.blob");
  const seaConfig = join(work, "sea-config.json");
  writeFileSync(seaConfig, JSON.stringify({ main: bundleFile, output: blob, disableExperimentalSEAWarning: true, useCodeCache: false }));
  mustRun(nodeBinary(process.arch), ["--experimental-sea-config", seaConfig], { stdio: ["ignore", "ignore", "inherit"] });
  return blob;
}

/** A copy of the embedded Node for `arch` with the blob injected; checked to run (this machine's architecture) or to be an ELF of `arch`. */
function singleExecutable(blob, arch, exe) {
  const node = nodeBinary(arch.node);
  step(`injecting the bundle into a copy of Node ${EMBEDDED_NODE} for ${arch.node} (postject)`);
  // Node's official builds carry their symbols: stripped first, the executable loses about a
  // third of its size and postject has less to rewrite. binutils' strip knows the other
  // architecture's ELF on most machines; where it does not, an unstripped copy.
  if (spawnSync("strip", ["--strip-all", "-o", exe, node], { stdio: "ignore" }).status !== 0) copyFileSync(node, exe);
  chmodSync(exe, 0o755);
  const postject = join(root, "node_modules", "postject", "dist", "cli.js");
  // postject warns about the ELF notes it leaves alone; only a failure is worth showing.
  const inject = spawnSync(process.execPath, [postject, exe, "NODE_SEA_BLOB", blob, "--sentinel-fuse", "NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2"], {
    encoding: "utf8",
  });
  if (inject.status !== 0) {
    process.stderr.write(`postject failed (exit ${inject.status})\n${inject.stdout}${inject.stderr}\n`);
    process.exit(1);
  }
  if (arch.node !== process.arch) {
    step(`checking ${exe} is an ELF for ${arch.node}`);
    const kind = spawnSync("file", ["-b", exe], { encoding: "utf8" });
    if (kind.status === 0 && !kind.stdout.includes(arch.elf)) {
      process.stderr.write(`${exe} is not an ${arch.elf} executable: ${kind.stdout}\n`);
      process.exit(1);
    }
    return;
  }
  step("checking the executable runs without node on PATH");
  const check = spawnSync(exe, ["--version"], { encoding: "utf8", env: { PATH: "/usr/bin:/bin" } });
  if (check.status !== 0 || check.stdout.trim() !== version) {
    process.stderr.write(`the executable does not run: exit ${check.status}\n${check.stdout}${check.stderr}\n`);
    process.exit(1);
  }
}

/** The .deb by hand: a staging tree, DEBIAN/ control files, `dpkg-deb --build`. */
async function debian(exe, arch, debFile) {
  const tree = join(work, `deb-${arch.deb}`);
  rmSync(tree, { recursive: true, force: true });
  const put = (path, content, mode = 0o644) => {
    const file = join(tree, path);
    mkdirSync(join(file, ".."), { recursive: true });
    if (Buffer.isBuffer(content) || typeof content === "string") writeFileSync(file, content);
    else copyFileSync(content.from, file);
    chmodSync(file, mode);
  };
  put("usr/bin/rl-agent", { from: exe }, 0o755);
  put("lib/systemd/system/rl-agent.service", { from: join(root, "deploy/systemd/rl-agent.service") });
  // 0644 in the archive, 0640 root:rl-agent once postinst has made the group (it holds the token).
  put("etc/rl-agent/agent.env", await envFileText(), 0o644);
  put("usr/share/man/man1/rl-agent.1.gz", gzipSync(await manPage(version), { level: 9 }));
  put("usr/share/doc/rl-agent/changelog.gz", gzipSync(debianChangelog(debVersion), { level: 9 }));
  put("usr/share/lintian/overrides/rl-agent", LINTIAN_OVERRIDES);
  put("usr/share/doc/rl-agent/README.md", { from: join(root, "packages/agent/README.md") });
  put("usr/share/doc/rl-agent/copyright", debianCopyright());
  put("usr/share/doc/rl-agent/LICENSE", { from: join(root, "LICENSE") });
  const installedKb = Math.ceil(statSync(exe).size / 1024) + 64;
  put("DEBIAN/control", debianControl({ version: debVersion, arch: arch.deb, installedKb }));
  put("DEBIAN/conffiles", "/etc/rl-agent/agent.env\n");
  for (const [name, text] of Object.entries(debianScripts())) put(`DEBIAN/${name}`, text, 0o755);
  // Owned by root whoever builds: the package must not carry the builder's uid. gzip -3: most of
  // the size for a fraction of the time of -9 or xz on a 100 MB executable.
  mustRun("dpkg-deb", ["--root-owner-group", "-Zgzip", "-z3", "--build", tree, debFile], { stdio: ["ignore", "ignore", "inherit"] });
}

function debianCopyright() {
  return `Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: rl-agent
Source: route-list-controller

Files: *
Copyright: 2025-2026 route-list-controller authors
License: Apache-2.0
 On Debian systems the full text of the license is in /usr/share/common-licenses/Apache-2.0
 and, as shipped, in /usr/share/doc/rl-agent/LICENSE.
`;
}

async function main() {
  if (!args.has("--skip-build")) {
    ensureInstalled();
    ensureBuilt();
  }
  const { loadBuildInfo } = await import("../packages/shared/dist/version.js");
  version = loadBuildInfo(new URL("../packages/agent/", import.meta.url)).version;
  debVersion = debianVersion(version);
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  mkdirSync(outDir, { recursive: true });
  const bundleFile = join(work, "rl-agent.cjs");
  if (spawnSync("dpkg-deb", ["--version"], { stdio: "ignore" }).status !== 0) {
    process.stderr.write("dpkg-deb not found: the .deb cannot be built (apt-get install dpkg)\n");
    process.exit(1);
  }

  step("bundling the agent (esbuild)");
  await bundle(bundleFile);
  step(`Node ${EMBEDDED_NODE} for ${targets.map((a) => a.node).join(" and ")} (node-linux-* from the npm registry, cached)`);
  const blob = seaBlob(bundleFile);
  for (const arch of targets) {
    const exe = join(outDir, `rl-agent-linux-${arch.node}`);
    const debFile = join(outDir, `rl-agent_${debVersion}_${arch.deb}.deb`);
    step(`single executable ${exe}`);
    singleExecutable(blob, arch, exe);
    step(`debian package ${debFile}`);
    await debian(exe, arch, debFile);
    if (!args.has("--no-lintian") && spawnSync("lintian", ["--version"], { stdio: "ignore" }).status === 0) {
      step("lintian");
      mustRun("lintian", ["--fail-on", "error", debFile]);
    }
  }
  rmSync(work, { recursive: true, force: true });
  step("done");
}

await main();
