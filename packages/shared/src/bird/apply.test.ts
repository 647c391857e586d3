import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import type { Clock } from "../time.js";
import { type ApplyOptions, applyBirdConfig } from "./apply.js";
import { type BirdControl, BirdError, type BirdReply } from "./birdc.js";
import { linesToCheck } from "./route-lines.js";
import type { ProcessRunner } from "./validate.js";

const reply = (code: number, text = ""): BirdReply => ({ code, text, lines: [{ code, text }] });

/** Records commands; answers from `answers` (a reply, an error, or the default per command). */
function fakeBird(answers: Record<string, (BirdReply | Error)[]> = {}): BirdControl & { commands: string[] } {
  const commands: string[] = [];
  const defaults: Record<string, BirdReply> = {
    "show status": reply(13, "Daemon is up and running"),
    "configure confirm": reply(18, "Reconfiguration confirmed"),
    "configure undo": reply(21, "Undo requested"),
  };
  return {
    commands,
    close: () => undefined,
    command: async (command) => {
      commands.push(command);
      const next = answers[command]?.shift() ?? defaults[command] ?? (command.startsWith("configure timeout") ? reply(3, "Reconfigured") : undefined);
      if (!next) throw new Error(`unexpected command ${command}`);
      if (next instanceof Error) throw next;
      return next;
    },
  };
}

const okRunner: ProcessRunner = async () => ({ code: 0, signal: null, stdout: "", stderr: "" });
const clock = (): Clock => {
  let now = 0;
  return { now: () => now, sleep: async (ms) => void (now += ms) };
};

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(mode: "include" | "full" = "full"): ApplyOptions {
  const root = mkdtempSync(join(tmpdir(), "rl-apply-"));
  dirs.push(root);
  const configDir = join(root, "etc");
  const stagingDir = join(root, "staging");
  mkdirSync(configDir);
  writeFileSync(join(configDir, "bird.conf"), "old main\n");
  writeFileSync(join(configDir, "rl-routes.conf"), "old routes\n");
  return {
    files: mode === "full" ? { "bird.conf": "new main\n", "rl-routes.conf": "new routes\n" } : { "rl-routes.conf": "new routes\n" },
    entry: mode === "full" ? "bird.conf" : "rl-routes.conf",
    mode,
    configDir,
    stagingDir,
    timeoutSeconds: 30,
  };
}

const read = (o: ApplyOptions, name: string) => readFileSync(join(o.configDir, name), "utf8");

describe("applyBirdConfig", () => {
  it("validates the staged copy, swaps the files in, configures with a timeout, waits for BIRD, then confirms", async () => {
    const o = setup();
    const bird = fakeBird();
    const validated: string[] = [];
    const runner: ProcessRunner = async (_file, args) => {
      validated.push(args[2] as string);
      expect(readFileSync(args[2] as string, "utf8")).toBe("new main\n");
      return { code: 0, signal: null, stdout: "", stderr: "" };
    };
    const pending = await applyBirdConfig({ birdc: bird, runner, clock: clock() }, o);
    expect(validated[0]?.startsWith(o.stagingDir)).toBe(true);
    expect([read(o, "bird.conf"), read(o, "rl-routes.conf")]).toEqual(["new main\n", "new routes\n"]);
    expect(bird.commands).toEqual(["configure timeout 30", "show status"]);
    expect(pending.reply.code).toBe(3);
    await pending.confirm();
    expect(bird.commands.at(-1)).toBe("configure confirm");
    expect(await readdir(o.stagingDir)).toEqual([]); // the staging copy is gone
  });

  it("never touches the running files nor BIRD when bird -p refuses the config", async () => {
    const o = setup();
    const bird = fakeBird();
    const runner: ProcessRunner = async (_f, args) => ({
      code: 1,
      signal: null,
      stdout: "",
      stderr: `bird: ${args[2]}:1:3 syntax error, unexpected CF_SYM_UNDEFINED\n`,
    });
    const error = await applyBirdConfig({ birdc: bird, runner, clock: clock() }, o).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "bird_config_invalid", birdMessage: "syntax error, unexpected CF_SYM_UNDEFINED" });
    expect((error as { excerpt: string }).excerpt).toContain(" 1 | new main\n   |   ^");
    expect([read(o, "bird.conf"), read(o, "rl-routes.conf")]).toEqual(["old main\n", "old routes\n"]);
    expect(bird.commands).toEqual([]);
  });

  it("validates an include through a wrapper that includes it, as the operator's bird.conf would", async () => {
    const o = setup("include");
    let wrapper = "";
    const runner: ProcessRunner = async (_f, args) => {
      wrapper = readFileSync(args[2] as string, "utf8");
      return { code: 0, signal: null, stdout: "", stderr: "" };
    };
    await applyBirdConfig({ birdc: fakeBird(), runner, clock: clock() }, o);
    expect(wrapper).toBe('protocol device {\n}\ninclude "rl-routes.conf";\n');
    expect([read(o, "bird.conf"), read(o, "rl-routes.conf")]).toEqual(["old main\n", "new routes\n"]);
  });

  it("puts the previous files back when BIRD refuses configure (8002), with BIRD's location", async () => {
    const o = setup("include");
    const failed = reply(8002, `${join(o.configDir, "rl-routes.conf")}:1:4 syntax error`);
    const bird = fakeBird({ "configure timeout 30": [new BirdError("bird_command_failed", "x", { birdCode: 8002, reply: failed })] });
    const error = await applyBirdConfig({ birdc: bird, runner: okRunner, clock: clock() }, o).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: "bird_config_invalid", location: { line: 1, column: 4 } });
    expect((error as { excerpt: string }).excerpt).toContain(" 1 | new routes"); // read before the files went back
    expect(read(o, "rl-routes.conf")).toBe("old routes\n");
  });

  it("removes a file that did not exist before when configure fails", async () => {
    const o = setup("include");
    rmSync(join(o.configDir, "rl-routes.conf"));
    const bird = fakeBird({ "configure timeout 30": [new BirdError("bird_unavailable", "gone")] });
    await expect(applyBirdConfig({ birdc: bird, runner: okRunner, clock: clock() }, o)).rejects.toMatchObject({ code: "bird_unavailable" });
    expect(existsSync(join(o.configDir, "rl-routes.conf"))).toBe(false);
  });

  it("waits while BIRD is busy after configure, and gives up after the answer timeout", async () => {
    const o = setup();
    const busy = () => new BirdError("bird_timeout", "busy");
    const bird = fakeBird({ "show status": [busy(), busy()] });
    await applyBirdConfig({ birdc: bird, runner: okRunner, clock: clock() }, o);
    expect(bird.commands.filter((c) => c === "show status")).toHaveLength(3);
  });

  it("gives up when BIRD does not answer after configure, and puts the previous files back", async () => {
    const o = setup();
    const dead = fakeBird({ "show status": Array.from({ length: 1000 }, () => new BirdError("bird_timeout", "busy")) });
    await expect(applyBirdConfig({ birdc: dead, runner: okRunner, clock: clock() }, { ...o, answerTimeoutMs: 1000 })).rejects.toMatchObject({
      code: "bird_timeout",
    });
    expect([read(o, "bird.conf"), read(o, "rl-routes.conf")]).toEqual(["old main\n", "old routes\n"]);
  });

  it("says bird_reverted when the confirm comes after BIRD went back on its own", async () => {
    const o = setup();
    const bird = fakeBird({ "configure confirm": [reply(19, "Nothing to do")] });
    const pending = await applyBirdConfig({ birdc: bird, runner: okRunner, clock: clock() }, o);
    await expect(pending.confirm()).rejects.toMatchObject({ name: "ApplyError", code: "bird_reverted" });
  });

  it("undo puts the previous files back and asks BIRD to undo", async () => {
    const o = setup();
    const bird = fakeBird();
    const pending = await applyBirdConfig({ birdc: bird, runner: okRunner, clock: clock() }, o);
    await pending.undo();
    expect([read(o, "bird.conf"), read(o, "rl-routes.conf")]).toEqual(["old main\n", "old routes\n"]);
    expect(bird.commands.at(-1)).toBe("configure undo");
  });

  it("refuses file names that are paths", async () => {
    const o = setup();
    await expect(
      applyBirdConfig({ birdc: fakeBird(), runner: okRunner, clock: clock() }, { ...o, files: { "../x.conf": "" }, entry: "../x.conf" }),
    ).rejects.toThrow(/plain file name/);
  });
});

describe("applyBirdConfig - what bird -p reads", () => {
  const header = "protocol static st {\n  ipv4;";
  const routes = (...nets: string[]) => nets.map((n) => `  route ${n} blackhole;`).join("\n");
  const routeFile = (...nets: string[]) => `${header}\n${routes(...nets)}\n}\n`;

  /** A runner that keeps the text of each file in the directory of the config `bird -p` was given. */
  function readingRunner(): ProcessRunner & { seen: Record<string, string> } {
    const seen: Record<string, string> = {};
    const runner: ProcessRunner = async (_file, args) => {
      const dir = (args[2] as string).replace(/\/[^/]+$/, "");
      for (const name of await readdir(dir)) seen[name] = readFileSync(join(dir, name), "utf8");
      return { code: 0, signal: null, stdout: "", stderr: "" };
    };
    return Object.assign(runner, { seen });
  }

  function routeSetup(): ApplyOptions {
    const o = setup();
    writeFileSync(join(o.configDir, "bird.conf"), 'include "a.conf";\ninclude "b.conf";\n');
    writeFileSync(join(o.configDir, "a.conf"), routeFile("10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8"));
    writeFileSync(join(o.configDir, "b.conf"), routeFile("20.0.0.0/8", "21.0.0.0/8"));
    return {
      ...o,
      files: {
        "bird.conf": 'include "a.conf";\ninclude "b.conf";\ninclude "c.conf";\n',
        "a.conf": routeFile("10.0.0.0/8", "12.0.0.0/8", "13.0.0.0/8"),
        "b.conf": routeFile("20.0.0.0/8", "21.0.0.0/8"),
        "c.conf": routeFile("30.0.0.0/8"),
      },
      entry: "bird.conf",
      routeFiles: (name) => name !== "bird.conf",
    };
  }

  it("leaves blank the route lines BIRD runs already, line for line, and keeps the new ones and every other line", async () => {
    const o = routeSetup();
    const runner = readingRunner();
    await applyBirdConfig({ birdc: fakeBird(), runner, clock: clock() }, o);
    // A changed route file: kept routes blank, the new one where it goes, so BIRD's line numbers hold.
    expect(runner.seen["a.conf"]).toBe(`${header}\n\n\n  route 13.0.0.0/8 blackhole;\n}\n`);
    expect(runner.seen["a.conf"]!.split("\n")).toHaveLength(o.files["a.conf"]!.split("\n").length);
    // An unchanged one: only its protocol is parsed again. A new one, and the main file: whole.
    expect(runner.seen["b.conf"]).toBe(`${header}\n\n\n}\n`);
    expect(runner.seen["c.conf"]).toBe(o.files["c.conf"]);
    expect(runner.seen["bird.conf"]).toBe(o.files["bird.conf"]);
    // What runs is the whole of each file.
    for (const name of ["a.conf", "b.conf", "c.conf", "bird.conf"]) expect(readFileSync(join(o.configDir, name), "utf8")).toBe(o.files[name]);
  });

  it("checks whole a route file that grew more than eightfold (a first big apply: few of its lines run already)", async () => {
    const o = routeSetup();
    const many = Array.from({ length: 40 }, (_, i) => `10.${i}.0.0/16`);
    o.files["b.conf"] = routeFile("20.0.0.0/8", ...many);
    const runner = readingRunner();
    await applyBirdConfig({ birdc: fakeBird(), runner, clock: clock() }, o);
    expect(runner.seen["b.conf"]).toBe(o.files["b.conf"]);
    expect(runner.seen["a.conf"]).toBe(`${header}\n\n\n  route 13.0.0.0/8 blackhole;\n}\n`);
  });

  it("without routeFiles, checks every line of every file", async () => {
    const { routeFiles: _, ...o } = routeSetup();
    const runner = readingRunner();
    await applyBirdConfig({ birdc: fakeBird(), runner, clock: clock() }, o);
    for (const name of ["a.conf", "b.conf", "c.conf", "bird.conf"]) expect(runner.seen[name]).toBe(o.files[name]);
  });
});

describe("linesToCheck", () => {
  /** The plain rule: a route line of the new text that is also a route line of the running one is left blank. */
  function model(text: string, running: string): string {
    const isRoute = (line: string) => /^[ \t]*route[ \t]/.test(line);
    const known = new Set(running.split("\n").filter(isRoute));
    return text
      .split("\n")
      .map((line) => (isRoute(line) && known.has(line) ? "" : line))
      .join("\n");
  }
  const line = fc.oneof(
    fc.constantFrom("  route 10.0.0.0/8 blackhole;", "  route 10.0.0.0/8 unreachable;", "\troute 11.0.0.0/8 blackhole;", "route 12.0.0.0/8 blackhole;"),
    fc.integer({ min: 0, max: 40 }).map((i) => `  route 10.${i}.0.0/16 blackhole;`),
    fc.constantFrom("protocol static st {", "  ipv4;", "}", "", "  routes 1;", "  route", "  route ", "# route 10.0.0.0/8 blackhole;"),
    fc.string({ maxLength: 12 }).filter((s) => !s.includes("\n")),
  );
  const file = fc.array(line, { maxLength: 60 }).map((lines) => lines.join("\n"));

  it("leaves blank exactly the route lines the running file has, whatever the lines (looked up by hash)", () => {
    fc.assert(
      fc.property(file, file, fc.boolean(), (text, running, shareSome) => {
        const base = shareSome ? `${running}\n${text.split("\n").slice(0, 5).join("\n")}` : running;
        expect(linesToCheck(text, base, { misses: 0 })).toBe(model(text, base));
      }),
      { numRuns: 2000 },
    );
  });

  it("never leaves blank a line BIRD does not run, however far apart the two files' lines are", () => {
    fc.assert(
      fc.property(file, file, fc.integer({ min: 0, max: 4 }), fc.integer({ min: 0, max: 4 }), (text, running, lookahead, misses) => {
        const out = linesToCheck(text, running, { lookahead, misses }).split("\n");
        const lines = text.split("\n");
        const expected = model(text, running).split("\n");
        expect(out).toHaveLength(lines.length);
        // Each line is either kept as it is, or blank where the plain rule blanks it.
        for (const [i, line] of out.entries()) expect(line === lines[i] || (line === "" && expected[i] === "")).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("finds every known route of a sparse change by walking both files", () => {
    const nets = Array.from({ length: 3000 }, (_, i) => `  route 10.${i >> 8}.${i & 255}.0/24 blackhole;`);
    const running = `protocol static st {\n  ipv4;\n${nets.join("\n")}\n}\n`;
    // Every 50th route dropped, a new one every 70th, and one run of 20 dropped together.
    const changed = nets
      .filter((_, i) => i % 50 !== 7 && (i < 1000 || i >= 1020))
      .flatMap((line, i) => (i % 70 === 3 ? [line, `  route 11.0.${i & 255}.0/24 blackhole;`] : [line]));
    const text = `protocol static st {\n  ipv4;\n${changed.join("\n")}\n}\n`;
    // No miss limit: were a known line missed by the walk, it would be kept and differ from the rule.
    expect(linesToCheck(text, running, { misses: Number.POSITIVE_INFINITY })).toBe(model(text, running));
  });
});
