import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../time.js";
import { type ApplyOptions, applyBirdConfig } from "./apply.js";
import { groupId } from "./atomic-file.js";
import type { BirdControl, BirdReply } from "./birdc.js";
import type { ProcessRunner } from "./validate.js";

// How applyBirdConfig writes files on the router: modes, groups, and no symlink followed.

const reply = (code: number): BirdReply => ({ code, text: "", lines: [{ code, text: "" }] });
const bird: BirdControl = { close: () => undefined, command: async (c) => reply(c === "show status" ? 13 : c === "configure confirm" ? 18 : 3) };
const okRunner: ProcessRunner = async () => ({ code: 0, signal: null, stdout: "", stderr: "" });
const clock: Clock = { now: () => 0, sleep: async () => undefined };
const SECRET = 'protocol bgp p1 {\n  password "s3cret";\n}\n';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(): ApplyOptions & { victim: string } {
  const root = mkdtempSync(join(tmpdir(), "rl-apply-files-"));
  dirs.push(root);
  const configDir = join(root, "etc");
  mkdirSync(configDir);
  writeFileSync(join(configDir, "rl-routes.conf"), "old routes\n", { mode: 0o644 });
  const victim = join(root, "victim");
  writeFileSync(victim, "precious\n");
  return {
    files: { "rl-routes.conf": SECRET },
    entry: "rl-routes.conf",
    mode: "include",
    configDir,
    stagingDir: join(root, "staging"),
    timeoutSeconds: 30,
    victim,
  };
}

describe("applyBirdConfig - files on the router", () => {
  it("installs the config 0640 with group bird (0600 without that group), whatever the umask", async () => {
    const o = setup();
    const umask = process.umask(0o000);
    try {
      await applyBirdConfig({ birdc: bird, runner: okRunner, clock }, o);
    } finally {
      process.umask(umask);
    }
    const gid = await groupId("bird");
    for (const name of ["rl-routes.conf", "rl-routes.conf.rl-prev"]) {
      const info = statSync(join(o.configDir, name));
      if (gid === null) expect(info.mode & 0o777, name).toBe(0o600);
      else {
        expect(info.mode & 0o777, name).toBe(0o640);
        expect(info.gid, name).toBe(gid);
      }
    }
    expect(readFileSync(join(o.configDir, "rl-routes.conf"), "utf8")).toBe(SECRET);
    // No temporary file is left beside the config.
    expect(readdirSync(o.configDir).sort()).toEqual(["rl-routes.conf", "rl-routes.conf.rl-prev"]);
  });

  it("does not write through symlinks planted at the temporary or backup names", async () => {
    const o = setup();
    symlinkSync(o.victim, join(o.configDir, ".rl-routes.conf.rl-new"));
    symlinkSync(o.victim, join(o.configDir, "rl-routes.conf.rl-prev"));
    await applyBirdConfig({ birdc: bird, runner: okRunner, clock }, o);
    expect(readFileSync(o.victim, "utf8")).toBe("precious\n");
    expect(readFileSync(join(o.configDir, "rl-routes.conf"), "utf8")).toBe(SECRET);
    // The backup is a file of its own now, not the link.
    expect(lstatSync(join(o.configDir, "rl-routes.conf.rl-prev")).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(o.configDir, "rl-routes.conf.rl-prev"), "utf8")).toBe("old routes\n");
  });

  it("refuses a running config that is a symlink rather than copying what it points to", async () => {
    const o = setup();
    rmSync(join(o.configDir, "rl-routes.conf"));
    symlinkSync(o.victim, join(o.configDir, "rl-routes.conf"));
    await expect(applyBirdConfig({ birdc: bird, runner: okRunner, clock }, o)).rejects.toMatchObject({ code: "ELOOP" });
    expect(readFileSync(o.victim, "utf8")).toBe("precious\n");
  });

  it("stages the files 0600 in a private directory", async () => {
    const o = setup();
    const seen: number[] = [];
    const runner: ProcessRunner = async (_f, args) => {
      const staged = args[2] as string;
      const dir = join(staged, "..");
      seen.push(statSync(dir).mode & 0o777, ...readdirSync(dir).map((f) => statSync(join(dir, f)).mode & 0o777));
      return { code: 0, signal: null, stdout: "", stderr: "" };
    };
    const umask = process.umask(0o000);
    try {
      await applyBirdConfig({ birdc: bird, runner, clock }, o);
    } finally {
      process.umask(umask);
    }
    expect(seen[0]).toBe(0o700);
    expect(seen.slice(1).every((m) => m === 0o600)).toBe(true);
    expect(statSync(o.stagingDir).mode & 0o077).toBe(0);
  });

  it("has bird -p read the whole new config, the unchanged files as links to the running ones", async () => {
    const o = setup();
    writeFileSync(join(o.configDir, "rl-routes.static.conf"), "protocol static s {\n}\n");
    o.files = { "rl-routes.conf": 'include "rl-routes.static.conf";\n', "rl-routes.static.conf": "protocol static s {\n}\n" };
    const seen: Record<string, { text: string; link: boolean }> = {};
    const runner: ProcessRunner = async (_f, args) => {
      const dir = join(args[2] as string, "..");
      for (const f of readdirSync(dir)) seen[f] = { text: readFileSync(join(dir, f), "utf8"), link: lstatSync(join(dir, f)).isSymbolicLink() };
      return { code: 0, signal: null, stdout: "", stderr: "" };
    };
    await applyBirdConfig({ birdc: bird, runner, clock }, o);
    expect(seen["rl-routes.conf"]?.text).toBe(o.files["rl-routes.conf"]);
    expect(seen["rl-routes.static.conf"]).toEqual({ text: o.files["rl-routes.static.conf"], link: true });
  });

  it("replaces a running file whose bytes only look like the new text when read one byte a character", async () => {
    const o = setup();
    // "é" in Latin-1 is one byte; the rendered text is UTF-8 (two bytes): not the same file.
    writeFileSync(join(o.configDir, "rl-routes.conf"), Buffer.from([0x23, 0xe9, 0x0a]));
    o.files = { "rl-routes.conf": "#é\n" };
    const pending = await applyBirdConfig({ birdc: bird, runner: okRunner, clock }, o);
    expect(pending.configured).toBe(true);
    expect(readFileSync(join(o.configDir, "rl-routes.conf"))).toEqual(Buffer.from("#é\n", "utf8"));
  });
});
