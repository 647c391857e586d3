import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, onTestFinished } from "vitest";
import { describeEachBird } from "../../../../test/helpers/bird-versions.js";
import { BirdConfigError, createProcessRunner, formatExcerpt, type ProcessRunner, parseBirdError, validateBirdConfig } from "./validate.js";

const source = 'router id 192.0.2.1;\nprotocol bgp peer1 {\n\tdescription "a " b";\n}\n';
const stderrOf =
  (text: string): ProcessRunner =>
  async () => ({ code: 1, signal: null, stdout: "", stderr: text });

describe("validateBirdConfig", () => {
  it("passes when bird -p exits 0, and runs exactly `bird -p -c <file>`", async () => {
    const calls: unknown[] = [];
    const runner: ProcessRunner = async (file, args) => {
      calls.push([file, args]);
      return { code: 0, signal: null, stdout: "", stderr: "" };
    };
    await validateBirdConfig("/stage/bird.conf", { runner, birdBin: "/usr/sbin/bird" });
    expect(calls).toEqual([["/usr/sbin/bird", ["-p", "-c", "/stage/bird.conf"]]]);
  });

  it("turns BIRD's file:line:col message into a located error with a caret under the column", async () => {
    const runner = stderrOf("bird: /stage/rl-routes.conf:3:20 syntax error, unexpected CF_SYM_UNDEFINED, expecting ';'\n");
    const error = await validateBirdConfig("/stage/bird.conf", { runner, readText: async () => source }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BirdConfigError);
    const e = error as BirdConfigError;
    expect(e.code).toBe("bird_config_invalid");
    expect(e.location).toEqual({ file: "/stage/rl-routes.conf", line: 3, column: 20 });
    expect(e.birdMessage).toBe("syntax error, unexpected CF_SYM_UNDEFINED, expecting ';'");
    // The tab before the text is kept in the caret line so the caret lines up in a terminal.
    expect(e.excerpt).toBe(
      ["/stage/rl-routes.conf:3:20 syntax error, unexpected CF_SYM_UNDEFINED, expecting ';'", ' 3 | \tdescription "a " b";', `   | \t${" ".repeat(18)}^`].join(
        "\n",
      ),
    );
  });

  it("keeps a message without a location as it is", async () => {
    const error = await validateBirdConfig("/x", { runner: stderrOf("bird: Unable to open configuration file /x: No such file or directory\n") }).catch(
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ location: null, message: "Unable to open configuration file /x: No such file or directory" });
  });

  it("still reports the location when the file cannot be read for the excerpt", async () => {
    const runner = stderrOf("bird: /gone.conf:1:0 No protocol is specified in the config file\n");
    const error = (await validateBirdConfig("/gone.conf", { runner }).catch((e: unknown) => e)) as BirdConfigError;
    expect(error.excerpt).toBe("/gone.conf:1:0 No protocol is specified in the config file");
  });
});

/** Captured `bird -p` stderr and the files it was about (fixtures/README.md). */
const captured = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), "utf8");
const CAPTURED_VERSIONS = ["2.0.12", "2.17.6", "3.1.8"];

describe("validateBirdConfig on the stderr of each BIRD version (captured)", () => {
  it.each(CAPTURED_VERSIONS)("BIRD %s: an error in an included file is located, with its line under a caret", async (version) => {
    const runner = stderrOf(captured(`bird-p-include-${version}.txt`));
    const error = (await validateBirdConfig("/tmp/cap/main.conf", { runner, readText: async () => captured("bird-p-include.conf") }).catch(
      (e: unknown) => e,
    )) as BirdConfigError;
    expect(error.location).toEqual({ file: "/tmp/cap/inc.conf", line: 3, column: 18 });
    expect(error.birdMessage).toBe("Invalid IPv4 prefix 10.0.0.1/8, maybe you wanted 10.0.0.0/8");
    expect(error.excerpt.split("\n").slice(1)).toEqual([" 3 |   route 10.0.0.1/8 blackhole;", "   |                  ^"]);
  });

  it.each(CAPTURED_VERSIONS)("BIRD %s: a peer with a password reports the real error, not the MD5 warning before it", async (version) => {
    const runner = stderrOf(captured(`bird-p-password-${version}.txt`));
    const error = (await validateBirdConfig("/tmp/cap/bad2.conf", { runner, readText: async () => captured("bird-p-password.conf") }).catch(
      (e: unknown) => e,
    )) as BirdConfigError;
    expect(error.location).toEqual({ file: "/tmp/cap/bad2.conf", line: 9, column: 1 });
    expect(error.birdMessage).toBe("EBGP requires explicit import policy");
    expect(error.excerpt).not.toContain("secret");
  });

  it("a bird -p that only warns and then times out names the warning without BIRD 3's stamp", async () => {
    const runner: ProcessRunner = async () => ({
      code: null,
      signal: "SIGTERM",
      timedOut: true,
      stdout: "",
      stderr: "bird: 2026-11-27 05:33:32.193 [0001] <WARN> /x.conf:9:1: Missing authentication option, assuming MD5\n",
    });
    const error = await validateBirdConfig("/x.conf", { runner, timeoutMs: 300 }).catch((e: unknown) => e);
    expect((error as Error).message).toBe("bird -p did not finish within 300 ms: /x.conf:9:1: Missing authentication option, assuming MD5");
  });
});

describe("parseBirdError / formatExcerpt", () => {
  it("masks a password on the offending line, in the excerpt and in BIRD's message, keeping line and column", async () => {
    const src = 'protocol bgp p1 {\n  neighbor 192.0.2.2 as 65001;\n  password "s3cr,et" ttl;\n}\n';
    const runner = stderrOf('bird: /stage/rl-routes.conf:3:24 syntax error, unexpected "s3cr,et"\n');
    const error = (await validateBirdConfig("/stage/bird.conf", { runner, readText: async () => src }).catch((e: unknown) => e)) as BirdConfigError;
    expect(error.location).toEqual({ file: "/stage/rl-routes.conf", line: 3, column: 24 });
    expect(error.excerpt).not.toContain("s3cr,et");
    expect(error.excerpt.split("\n")).toEqual([
      '/stage/rl-routes.conf:3:24 syntax error, unexpected "***"',
      ' 3 |   password "***" ttl;',
      `   | ${" ".repeat(19)}^`,
    ]);
  });

  it("masks an unterminated password and leaves other lines as they are", () => {
    const loc = { file: "f", line: 1, column: 5 };
    expect(formatExcerpt({ message: "m", location: loc }, '\tPASSWORD "abc')).toBe('f:1:5 m\n 1 | \tPASSWORD "***\n   | \t   ^');
    expect(formatExcerpt({ message: "m", location: loc }, 'description "no secret";')).toContain('description "no secret";');
  });

  it("reads the 8002 form of the control socket (no `bird: ` prefix)", () => {
    expect(parseBirdError("/etc/bird/bird.conf:12:5 Unknown symbol")).toEqual({
      message: "Unknown symbol",
      location: { file: "/etc/bird/bird.conf", line: 12, column: 5 },
    });
  });

  it("puts the caret on column 1 for BIRD's column 0", () => {
    expect(formatExcerpt({ message: "m", location: { file: "f", line: 1, column: 0 } }, "abc")).toBe("f:1:0 m\n 1 | abc\n   | ^");
  });
});

describe("createProcessRunner (execa)", () => {
  it("kills a child that outruns its timeout and keeps its stderr; a missing program rejects with ENOENT", async () => {
    const runner = createProcessRunner();
    const started = Date.now();
    const hung = await runner("sh", ["-c", "echo starting >&2; exec sleep 30"], { timeoutMs: 300 });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(hung).toMatchObject({ code: null, signal: "SIGTERM", timedOut: true, stderr: "starting\n" });
    expect(await runner("sh", ["-c", "echo 'bird: x.conf:1:2 bad' >&2; exit 1"])).toMatchObject({ code: 1, stderr: "bird: x.conf:1:2 bad\n" });
    await expect(runner("/nonexistent/bird", ["-p"])).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("validateBirdConfig reports a bird -p that hangs as a timeout, not as a good config", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rl-validate-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const fakeBird = join(dir, "bird");
    writeFileSync(fakeBird, "#!/bin/sh\necho 'parsing' >&2\nexec sleep 30\n", { mode: 0o755 });
    const error = await validateBirdConfig(join(dir, "bird.conf"), { runner: createProcessRunner(), birdBin: fakeBird, timeoutMs: 300 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(BirdConfigError);
    expect((error as Error).message).toBe("bird -p did not finish within 300 ms: parsing");
  });
});

describeEachBird("validateBirdConfig with the real bird", [], (b) => {
  it("accepts a good file and locates the error in an included file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rl-validate-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const runner = createProcessRunner();
    const birdBin = b.bird;
    writeFileSync(join(dir, "good.conf"), "router id 192.0.2.1;\nprotocol device {\n}\n");
    await validateBirdConfig(join(dir, "good.conf"), { runner, birdBin });
    writeFileSync(join(dir, "main.conf"), 'router id 192.0.2.1;\nprotocol device {\n}\ninclude "inc.conf";\n');
    writeFileSync(join(dir, "inc.conf"), "protocol static st {\n  ipv4;\n  route 10.0.0.1/8 blackhole;\n}\n");
    const error = (await validateBirdConfig(join(dir, "main.conf"), { runner, birdBin }).catch((e: unknown) => e)) as BirdConfigError;
    expect(error).toBeInstanceOf(BirdConfigError);
    expect(error.location).toEqual({ file: join(dir, "inc.conf"), line: 3, column: 18 });
    expect(error.birdMessage).toBe("Invalid IPv4 prefix 10.0.0.1/8, maybe you wanted 10.0.0.0/8");
    expect(error.excerpt.split("\n").slice(1)).toEqual([" 3 |   route 10.0.0.1/8 blackhole;", "   |                  ^"]);
  });

  it("a peer with a password in a refused file reports the real error, not the MD5 warning", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rl-validate-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, "bird.conf"), captured("bird-p-password.conf"));
    const error = (await validateBirdConfig(join(dir, "bird.conf"), { runner: createProcessRunner(), birdBin: b.bird }).catch(
      (e: unknown) => e,
    )) as BirdConfigError;
    expect(error.location).toEqual({ file: join(dir, "bird.conf"), line: 9, column: 1 });
    expect(error.birdMessage).toBe("EBGP requires explicit import policy");
    expect(error.excerpt).not.toContain("secret");
  });
});

describeEachBird("applyBirdConfig's check of route files with the real bird", [], (b) => {
  it("refuses a bad new route in a file whose other routes BIRD runs, naming its line in the real file", async () => {
    const { applyBirdConfig } = await import("./apply.js");
    const dir = mkdtempSync(join(tmpdir(), "rl-validate-routes-"));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const etc = join(dir, "etc");
    execFileSync("mkdir", ["-p", etc]);
    const main = 'router id 192.0.2.1;\nprotocol device {\n}\ninclude "st.conf";\n';
    const routes = (...nets: string[]) => `protocol static st {\n  ipv4;\n${nets.map((n) => `  route ${n} blackhole;`).join("\n")}\n}\n`;
    writeFileSync(join(etc, "bird.conf"), main);
    writeFileSync(join(etc, "st.conf"), routes("10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8"));
    const birdc = { close: () => undefined, command: async () => ({ code: 3, text: "", lines: [] }) };
    const clock = { now: () => 0, sleep: async () => undefined };
    const error = (await applyBirdConfig(
      { birdc, runner: createProcessRunner(), clock, birdBin: b.bird },
      {
        files: { "bird.conf": main, "st.conf": routes("10.0.0.0/8", "11.0.0.0/8", "13.0.0.1/8", "12.0.0.0/8") },
        entry: "bird.conf",
        mode: "full",
        configDir: etc,
        stagingDir: join(dir, "staging"),
        timeoutSeconds: 30,
        routeFiles: (name) => name === "st.conf",
      },
    ).catch((e: unknown) => e)) as BirdConfigError;
    expect(error).toBeInstanceOf(BirdConfigError);
    expect(error.location?.line).toBe(5);
    expect(error.birdMessage).toBe("Invalid IPv4 prefix 13.0.0.1/8, maybe you wanted 13.0.0.0/8");
    expect(error.excerpt.split("\n").slice(1)).toEqual([" 5 |   route 13.0.0.1/8 blackhole;", "   |                  ^"]);
  });
});
