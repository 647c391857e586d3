import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { FileText, MadeText } from "./atomic-file.js";
import { type ChangeOptions, validateChange } from "./change.js";
import { linesToCheck } from "./route-lines.js";
import { stageFiles, writeDiffering } from "./swap-files.js";
import type { ProcessRunner } from "./validate.js";
import { WrittenFiles } from "./written-files.js";

// What the apply reads and writes in BIRD's config directory when the caller keeps a
// WrittenFiles: files it knows unchanged are not read, a hand edit is, Buffers go through as
// bytes, a renderer's check text is used only against the file it was made for, and the running
// files are set aside as hard links.

/**
 * Every path opened through openSync (the validate step's reads), every file written by
 * fs/promises' writeFile (the copy bird -p reads), and a link(2) that fails on demand.
 */
const fsSpy = vi.hoisted(() => ({ opened: [] as string[], wrote: [] as string[], linkError: null as string | null }));
vi.mock("node:fs", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs")>();
  const openSync = ((path: string, ...rest: unknown[]) => {
    fsSpy.opened.push(String(path));
    return (real.openSync as (...a: unknown[]) => number)(path, ...rest);
  }) as typeof real.openSync;
  return { ...real, openSync, default: { ...real, openSync } };
});
vi.mock("node:fs/promises", async (importOriginal) => {
  const real = await importOriginal<typeof import("node:fs/promises")>();
  const link = (async (from: string, to: string) => {
    if (fsSpy.linkError) throw Object.assign(new Error(`link: ${fsSpy.linkError}`), { code: fsSpy.linkError });
    return real.link(from, to);
  }) as typeof real.link;
  const writeFile = ((path: string, ...rest: unknown[]) => {
    fsSpy.wrote.push(String(path));
    return (real.writeFile as (...a: unknown[]) => Promise<void>)(path, ...rest);
  }) as typeof real.writeFile;
  return { ...real, link, writeFile, default: { ...real, link, writeFile } };
});

const dirs: string[] = [];
beforeEach(() => {
  fsSpy.opened.length = 0;
  fsSpy.wrote.length = 0;
  fsSpy.linkError = null;
});
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const header = "protocol static st {\n  ipv4;";
const routeFile = (...nets: string[]) => `${header}\n${nets.map((n) => `  route ${n} blackhole;`).join("\n")}\n}\n`;
const INCLUDE = 'include "a.conf";\ninclude "b.conf";\n';

/** A runner that keeps what `bird -p` was given: each file's text (or the link's target) and inode. */
function recordingRunner(): ProcessRunner & { seen: Record<string, { text: string; link: boolean; ino: number }>[] } {
  const seen: Record<string, { text: string; link: boolean; ino: number }>[] = [];
  const runner: ProcessRunner = async (_f, args) => {
    const dir = dirname(args[2] as string);
    const files: Record<string, { text: string; link: boolean; ino: number }> = {};
    for (const name of await readdir(dir)) {
      const path = join(dir, name);
      files[name] = { text: readFileSync(path, "utf8"), link: lstatSync(path).isSymbolicLink(), ino: lstatSync(path).ino };
    }
    seen.push(files);
    return { code: 0, signal: null, stdout: "", stderr: "" };
  };
  return Object.assign(runner, { seen });
}

function setup(files: Record<string, FileText> = { "rl-routes.conf": INCLUDE, "a.conf": routeFile("10.0.0.0/8"), "b.conf": routeFile("20.0.0.0/8") }) {
  const root = mkdtempSync(join(tmpdir(), "rl-written-"));
  dirs.push(root);
  const configDir = join(root, "etc");
  mkdirSync(configDir);
  const runner = recordingRunner();
  const written = new WrittenFiles(configDir);
  const options = (given: Record<string, FileText>, extra: Partial<ChangeOptions> = {}): ChangeOptions => ({
    files: given,
    entry: "rl-routes.conf",
    mode: "include",
    configDir,
    stagingDir: join(root, "staging"),
    routeFiles: (name) => name !== "rl-routes.conf",
    written,
    ...extra,
  });
  /** validate then stage, as the agent does; answers the change (null: nothing differed). */
  const apply = async (given: Record<string, FileText>, extra: Partial<ChangeOptions> = {}) => {
    const change = await validateChange({ runner }, options(given, extra));
    return change ? { change, staged: await stageFiles(change) } : null;
  };
  const openedHere = () => fsSpy.opened.filter((p) => dirname(p) === configDir).map((p) => p.slice(configDir.length + 1));
  const read = (name: string) => readFileSync(join(configDir, name), "utf8");
  return { root, configDir, runner, written, options, apply, openedHere, read, files };
}

describe("WrittenFiles - what the validate step reads", () => {
  it("does not read a file it wrote that nobody touched since, and reads and replaces one edited by hand", async () => {
    const s = setup();
    await s.apply(s.files);
    fsSpy.opened.length = 0;
    // Only b.conf changes: nothing in the config directory is read (a.conf and the include are
    // known unchanged; b.conf's running text is the one this process wrote).
    const next = { ...s.files, "b.conf": routeFile("20.0.0.0/8", "21.0.0.0/8") };
    const second = await s.apply(next);
    expect(second?.change.changed).toEqual(["b.conf"]);
    expect(s.openedHere()).toEqual([]);
    // bird -p read b.conf's new route only: the running one is known without a read.
    expect(s.runner.seen.at(-1)?.["b.conf"]?.text).toBe(`${header}\n\n  route 21.0.0.0/8 blackhole;\n}\n`);

    // A hand edit (same size, in place) changes the file's times: read, found to differ, replaced.
    writeFileSync(join(s.configDir, "a.conf"), s.read("a.conf").replace("10.0.0.0/8", "10.9.9.9/8"));
    fsSpy.opened.length = 0;
    const third = await s.apply(next);
    expect(s.openedHere()).toEqual(["a.conf"]);
    expect(third?.change.changed).toEqual(["a.conf"]);
    expect(s.read("a.conf")).toBe(s.files["a.conf"]);
  });

  it("sees an editor's copy renamed over a file (a new inode), and a file removed", async () => {
    const s = setup();
    await s.apply(s.files);
    writeFileSync(join(s.configDir, "a.tmp"), s.files["a.conf"] as string);
    renameSync(join(s.configDir, "a.tmp"), join(s.configDir, "a.conf"));
    rmSync(join(s.configDir, "b.conf"));
    fsSpy.opened.length = 0;
    // a.conf holds the same bytes (read and found so), b.conf is gone (written again).
    const again = await s.apply(s.files);
    expect(s.openedHere().sort()).toEqual(["a.conf", "b.conf"]);
    expect(again?.change.changed).toEqual(["b.conf"]);
    fsSpy.opened.length = 0;
    expect(await s.apply(s.files)).toBeNull();
    expect(s.openedHere()).toEqual([]);
  });

  it("reads a file once when it knows nothing of it (a new process), then not again", async () => {
    const s = setup();
    for (const [name, text] of Object.entries(s.files)) writeFileSync(join(s.configDir, name), text);
    expect(await s.apply(s.files)).toBeNull();
    expect(s.openedHere().sort()).toEqual(["a.conf", "b.conf", "rl-routes.conf"]);
    fsSpy.opened.length = 0;
    // A render that makes new strings of the same text: known by its bytes, still not read.
    expect(await s.apply(Object.fromEntries(Object.entries(s.files).map(([n, t]) => [n, `${t}`])))).toBeNull();
    expect(s.openedHere()).toEqual([]);
  });

  it("reads every file when the caller keeps none, and refuses another directory's", async () => {
    const s = setup();
    await s.apply(s.files);
    fsSpy.opened.length = 0;
    expect(await validateChange({ runner: s.runner }, { ...s.options(s.files), written: undefined })).toBeNull();
    expect(s.openedHere().sort()).toEqual(["a.conf", "b.conf", "rl-routes.conf"]);
    await expect(validateChange({ runner: s.runner }, { ...s.options(s.files), written: new WrittenFiles(s.root) })).rejects.toThrow(TypeError);
  });
});

describe("WrittenFiles - files as bytes", () => {
  const bytes = (text: string) => Buffer.from(text, "utf8");

  it("writes Buffers as they are, compares them as bytes, and checks a route file's new lines only", async () => {
    const files = { "rl-routes.conf": bytes(INCLUDE), "a.conf": bytes(routeFile("10.0.0.0/8")), "b.conf": bytes(routeFile("20.0.0.0/8")) };
    const s = setup(files);
    await s.apply(files);
    expect(readFileSync(join(s.configDir, "a.conf")).equals(files["a.conf"])).toBe(true);
    // The same bytes in new Buffers: nothing to do, known or read.
    const copies = () => Object.fromEntries(Object.entries(files).map(([n, b]) => [n, Buffer.from(b)]));
    expect(await s.apply(copies())).toBeNull();
    expect(await validateChange({ runner: s.runner }, { ...s.options(copies()), written: undefined })).toBeNull();
    // A new route in b.conf: bird -p reads only it there (the bytes are ASCII, walked as text).
    const next = { ...files, "b.conf": bytes(routeFile("20.0.0.0/8", "21.0.0.0/8")) };
    await s.apply(next);
    expect(s.runner.seen.at(-1)?.["b.conf"]?.text).toBe(`${header}\n\n  route 21.0.0.0/8 blackhole;\n}\n`);
    expect(readFileSync(join(s.configDir, "b.conf")).equals(next["b.conf"])).toBe(true);
  });

  it("checks whole a route file that is not ASCII, and tells a string from bytes that only read like it", async () => {
    const s = setup();
    await s.apply(s.files);
    const odd = bytes(routeFile("20.0.0.0/8", "21.0.0.0/8").replace("protocol", "# é\nprotocol"));
    await s.apply({ ...s.files, "b.conf": odd });
    expect(s.runner.seen.at(-1)?.["b.conf"]?.text).toBe(odd.toString("utf8"));
    // "é" as one Latin-1 byte on disk is not the UTF-8 text "é": not the same file.
    writeFileSync(join(s.configDir, "a.conf"), Buffer.from([0x23, 0xe9, 0x0a]));
    const changed = await s.apply({ ...s.files, "b.conf": odd, "a.conf": "#é\n" });
    expect(changed?.change.changed).toEqual(["a.conf"]);
    expect(readFileSync(join(s.configDir, "a.conf"))).toEqual(bytes("#é\n"));
  });
});

describe("WrittenFiles - a renderer's check text", () => {
  const v1 = routeFile("10.0.0.0/8", "11.0.0.0/8");
  const v2 = routeFile("10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8");
  const given = `${header}\n\n\n  route 12.0.0.0/8 blackhole;\n}\n# the renderer's\n`;

  it("is what bird -p reads when it was made against the text the running file holds", async () => {
    const s = setup({ ...setup().files, "a.conf": v1 });
    await s.apply(s.files);
    await s.apply({ ...s.files, "a.conf": v2 }, { checkTexts: { "a.conf": { against: v1, text: given } } });
    expect(s.runner.seen.at(-1)?.["a.conf"]?.text).toBe(given);
  });

  it("is not used against another text, a file edited since, or without WrittenFiles: the lines are compared instead", async () => {
    const wrong = routeFile("10.0.0.0/8");
    const compared = linesToCheck(v2, v1);
    expect(compared).toBe(`${header}\n\n\n  route 12.0.0.0/8 blackhole;\n}\n`);

    const s = setup({ ...setup().files, "a.conf": v1 });
    await s.apply(s.files);
    await s.apply({ ...s.files, "a.conf": v2 }, { checkTexts: { "a.conf": { against: wrong, text: given } } });
    expect(s.runner.seen.at(-1)?.["a.conf"]?.text).toBe(compared);

    const edited = setup({ ...setup().files, "a.conf": v1 });
    await edited.apply(edited.files);
    writeFileSync(join(edited.configDir, "a.conf"), v1); // the same bytes, written by someone else
    await edited.apply({ ...edited.files, "a.conf": v2 }, { checkTexts: { "a.conf": { against: v1, text: given } } });
    expect(edited.runner.seen.at(-1)?.["a.conf"]?.text).toBe(compared);

    const none = setup({ ...setup().files, "a.conf": v1 });
    await none.apply(none.files);
    await none.apply({ ...none.files, "a.conf": v2 }, { written: undefined, checkTexts: { "a.conf": { against: v1, text: given } } });
    expect(none.runner.seen.at(-1)?.["a.conf"]?.text).toBe(compared);
  });
});

describe("WrittenFiles - route files held as a MadeText (a token, not their bytes)", () => {
  const v1 = routeFile("10.0.0.0/8", "11.0.0.0/8");
  const v2 = routeFile("10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8");
  /** Its bytes held until let go, then made by `make` (none: no more). */
  class Token implements MadeText {
    constructor(
      public held: Buffer | null,
      public make: (() => Buffer) | null = null,
    ) {}
    bytes() {
      return this.held ?? this.make?.() ?? null;
    }
  }

  it("knows an unchanged token by identity, and reads a replaced one's running file for bird -p when it can no longer be made", async () => {
    const a = new Token(Buffer.from(v1));
    const s = setup({ ...setup().files, "a.conf": a });
    await s.apply(s.files);
    expect(s.read("a.conf")).toBe(v1);
    a.held = null; // written: the bytes let go, and nothing makes them again
    fsSpy.opened.length = 0;
    expect(await s.apply(s.files)).toBeNull();
    expect(s.openedHere()).toEqual([]);
    // A new version without a check text: the running file (vouched for) is read, and only its new line checked.
    const changed = await s.apply({ ...s.files, "a.conf": new Token(Buffer.from(v2)) });
    expect(changed?.change.changed).toEqual(["a.conf"]);
    expect(s.openedHere()).toEqual(["a.conf"]);
    expect(s.runner.seen.at(-1)?.["a.conf"]?.text).toBe(linesToCheck(v2, v1));
    expect(s.read("a.conf")).toBe(v2);
  });

  it("reads a token's running file back for a renderer only while it holds what was written with that token", async () => {
    const a = new Token(Buffer.from(v1));
    const s = setup({ ...setup().files, "a.conf": a });
    await s.apply(s.files);
    a.held = null;
    expect(s.written.readBack("a.conf", a)?.toString()).toBe(v1);
    // Asked with another text (a later version, or the same bytes in another object): not vouched for.
    expect(s.written.readBack("a.conf", new Token(Buffer.from(v1)))).toBeNull();
    expect(s.written.readBack("b.conf", a)).toBeNull();
    // Edited by hand, even to the same size: not read back, and the validate step still reads and replaces it.
    writeFileSync(join(s.configDir, "a.conf"), v1.replace("11.0.0.0", "11.9.9.9"));
    expect(s.written.readBack("a.conf", a)).toBeNull();
    const next = new Token(Buffer.from(v2));
    fsSpy.opened.length = 0;
    const changed = await s.apply({ ...s.files, "a.conf": next });
    expect(changed?.change.changed).toEqual(["a.conf"]);
    expect(s.openedHere()).toEqual(["a.conf"]);
    expect(s.read("a.conf")).toBe(v2);
    expect(s.written.readBack("a.conf", next)?.toString()).toBe(v2);
    // Removed, or a symlink in its place: nothing.
    rmSync(join(s.configDir, "a.conf"));
    expect(s.written.readBack("a.conf", next)).toBeNull();
  });

  it("writes back a file edited by hand from the bytes the token makes again", async () => {
    const a = new Token(Buffer.from(v1), () => Buffer.from(v1));
    const s = setup({ ...setup().files, "a.conf": a });
    await s.apply(s.files);
    a.held = null;
    writeFileSync(join(s.configDir, "a.conf"), v1.replace("11.0.0.0", "11.9.9.9"));
    const again = await s.apply(s.files);
    expect(again?.change.changed).toEqual(["a.conf"]);
    expect(s.read("a.conf")).toBe(v1);
    expect(await writeDiffering(s.configDir, s.files, s.written)).toBe(false);
  });
});

describe("stageFiles - the running files set aside", () => {
  it("sets each running file aside as a hard link, and undo puts the very file back (known again, not read)", async () => {
    const s = setup();
    await s.apply(s.files);
    const old = lstatSync(join(s.configDir, "b.conf"));
    const next = { ...s.files, "b.conf": routeFile("20.0.0.0/8", "21.0.0.0/8") };
    const applied = await s.apply(next);
    const aside = lstatSync(join(s.configDir, "b.conf.rl-prev"));
    expect(aside.ino).toBe(old.ino);
    expect(lstatSync(join(s.configDir, "b.conf")).ino).not.toBe(old.ino);
    expect(s.read("b.conf.rl-prev")).toBe(s.files["b.conf"]);

    await applied?.staged.restore();
    expect(s.read("b.conf")).toBe(s.files["b.conf"]);
    expect(lstatSync(join(s.configDir, "b.conf")).ino).toBe(old.ino);
    fsSpy.opened.length = 0;
    expect(await s.apply(s.files)).toBeNull();
    expect(s.openedHere()).toEqual([]);
    // A second undo (the step after a failed one) finds nothing to put back and changes nothing.
    await applied?.staged.restore();
    expect(s.read("b.conf")).toBe(s.files["b.conf"]);
  });

  it("reads a restored file again when its copy aside was edited meanwhile", async () => {
    const s = setup();
    await s.apply(s.files);
    const applied = await s.apply({ ...s.files, "b.conf": routeFile("20.0.0.0/8", "21.0.0.0/8") });
    writeFileSync(join(s.configDir, "b.conf.rl-prev"), routeFile("29.0.0.0/8"));
    await applied?.staged.restore();
    fsSpy.opened.length = 0;
    const again = await s.apply(s.files);
    expect(s.openedHere()).toEqual(["b.conf"]);
    expect(again?.change.changed).toEqual(["b.conf"]);
  });

  it.each(["EXDEV", "EPERM"])("copies the running file aside when link fails (%s), and undo puts it back", async (code) => {
    const s = setup();
    await s.apply(s.files);
    const old = lstatSync(join(s.configDir, "b.conf"));
    fsSpy.linkError = code;
    const applied = await s.apply({ ...s.files, "b.conf": routeFile("20.0.0.0/8", "21.0.0.0/8") });
    expect(lstatSync(join(s.configDir, "b.conf.rl-prev")).ino).not.toBe(old.ino);
    expect(s.read("b.conf.rl-prev")).toBe(s.files["b.conf"]);
    await applied?.staged.restore();
    expect(s.read("b.conf")).toBe(s.files["b.conf"]);
  });

  it("holds the copy aside to the mode of the files it writes, when the running file was more open", async () => {
    const s = setup();
    for (const [name, text] of Object.entries(s.files)) writeFileSync(join(s.configDir, name), text, { mode: 0o644 });
    const applied = await s.apply({ ...s.files, "b.conf": routeFile("21.0.0.0/8") });
    expect(applied).not.toBeNull();
    expect(statSync(join(s.configDir, "b.conf.rl-prev")).mode & 0o077 & ~0o040).toBe(0);
  });
});

describe("validateChange - the copy bird -p reads", () => {
  it("is kept between applies: a file is written there again only when what bird -p is to read of it changed", async () => {
    const s = setup();
    await s.apply(s.files);
    await s.apply({ ...s.files, "b.conf": routeFile("20.0.0.0/8", "21.0.0.0/8") });
    fsSpy.wrote.length = 0;
    await s.apply({ ...s.files, "b.conf": routeFile("20.0.0.0/8", "22.0.0.0/8") });
    const [, second, third] = s.runner.seen;
    // Written this time: b.conf's check, then (once checked) what it is to be while it runs unchanged.
    expect(fsSpy.wrote.map((p) => p.slice(p.lastIndexOf("/") + 1))).toEqual(["b.conf", "b.conf"]);
    // a.conf runs unchanged: its protocol with every route blank, the same file both times.
    expect(third?.["a.conf"]).toEqual(second?.["a.conf"]);
    expect(third?.["a.conf"]?.text).toBe(`${header}\n\n}\n`);
    // The include runs unchanged: a link to the running file.
    expect(third?.["rl-routes.conf"]?.link).toBe(true);
    // b.conf changed: its new route alone.
    expect(third?.["b.conf"]?.text).toBe(`${header}\n\n  route 22.0.0.0/8 blackhole;\n}\n`);
  });

  it("is made again when it was left by an earlier process or is gone, and holds exactly what is to be checked", async () => {
    const s = setup();
    await s.apply(s.files);
    const [copy] = readdirSync(join(s.root, "staging")).map((d) => join(s.root, "staging", d));
    expect(copy).toBeDefined();
    // The agent restarts: its copy is still there, and someone left stale files in it.
    writeFileSync(join(copy as string, "a.conf"), "stale\n");
    writeFileSync(join(copy as string, "junk.conf"), "stale\n");
    const restarted = new WrittenFiles(s.configDir);
    await s.apply({ ...s.files, "b.conf": routeFile("20.0.0.0/8", "21.0.0.0/8") }, { written: restarted });
    const seen = s.runner.seen.at(-1) ?? {};
    expect(Object.keys(seen).sort()).toEqual(["a.conf", "b.conf", "rl-routes.conf", "rl-validate.conf"]);
    expect(seen["a.conf"]?.text).toBe(`${header}\n\n}\n`);

    rmSync(copy as string, { recursive: true, force: true });
    await s.apply({ ...s.files, "b.conf": routeFile("20.0.0.0/8", "22.0.0.0/8") }, { written: restarted });
    expect(s.runner.seen.at(-1)?.["b.conf"]?.text).toBe(`${header}\n\n  route 22.0.0.0/8 blackhole;\n}\n`);
    expect(s.runner.seen.at(-1)?.["a.conf"]?.text).toBe(`${header}\n\n}\n`);
  });

  it("serves two checks at once (the second gets a copy of its own)", async () => {
    const s = setup();
    await s.apply(s.files);
    const one = validateChange({ runner: s.runner }, s.options({ ...s.files, "b.conf": routeFile("21.0.0.0/8") }));
    const two = validateChange({ runner: s.runner }, s.options({ ...s.files, "b.conf": routeFile("22.0.0.0/8") }));
    const [a, b] = await Promise.all([one, two]);
    expect([a?.changed, b?.changed]).toEqual([["b.conf"], ["b.conf"]]);
    expect(
      s.runner.seen
        .slice(-2)
        .map((f) => f["b.conf"]?.text.includes("route 2"))
        .sort(),
    ).toEqual([true, true]);
  });
});

describe("writeDiffering with WrittenFiles", () => {
  it("does not read the files it knows unchanged, and writes back one edited by hand", async () => {
    const s = setup();
    expect(await writeDiffering(s.configDir, s.files, s.written)).toBe(true);
    fsSpy.opened.length = 0;
    expect(await writeDiffering(s.configDir, s.files, s.written)).toBe(false);
    expect(s.openedHere()).toEqual([]);
    writeFileSync(join(s.configDir, "a.conf"), "# by hand\n");
    expect(await writeDiffering(s.configDir, s.files, s.written)).toBe(true);
    expect(s.read("a.conf")).toBe(s.files["a.conf"]);
    // What it wrote, the validate step knows: nothing to read, nothing to do.
    fsSpy.opened.length = 0;
    expect(await s.apply(s.files)).toBeNull();
    expect(s.openedHere()).toEqual([]);
  });
});
