import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CONFIG_VARIABLES } from "./config.js";
import { environmentWithConfigFile, parseConfigFile } from "./config-file.js";
import { createLogger } from "./log.js";
import { envFileTemplate, VARIABLES } from "./variables.js";

// The agent's command line as an operator meets it: the real main.ts in a child process.

const root = join(import.meta.dirname, "../../..");
const dir = mkdtempSync(join(tmpdir(), "rl-agent-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function agent(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ["--import", "tsx", join(import.meta.dirname, "main.ts"), ...args], {
    cwd: root,
    encoding: "utf8",
    timeout: 60_000,
    env: {
      PATH: process.env.PATH ?? "",
      TSX_TSCONFIG_PATH: join(root, "test/e2e/tsconfig.agent-child.json"),
      RL_STATE_DIR: join(dir, "state"),
      BIRD_CONTROL_SOCKET: join(dir, "no-bird.ctl"),
      ...env,
    },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("rl-agent command line", () => {
  it("--help exits 0 and lists every command and every variable with its default; help CMD explains one", () => {
    const help = agent(["--help"]);
    expect(help.code, help.stderr).toBe(0);
    for (const command of ["run", "enroll", "status", "protocols", "help"]) expect(help.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    for (const name of CONFIG_VARIABLES) expect(help.stdout).toContain(name);
    expect(help.stdout).toContain("RL_POLL_SECONDS");
    expect(help.stdout).toContain("[default: 30]");
    expect(help.stdout).toContain("[default: /var/lib/rl-agent]");

    const status = agent(["help", "status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("usage: rl-agent status");
    expect(status.stdout).toMatch(/^ {2}2 {2}not enrolled/m);
    expect(agent(["status", "--help"]).stdout).toBe(status.stdout);
    expect(agent(["help", "nope"]).code).toBe(2);
    expect(agent([]).code).toBe(2);
  }, 120_000);

  it("status exits 2 when not enrolled and BIRD does not answer", () => {
    const status = agent(["status", "--json", "--config", "/dev/null"]);
    expect(status.code, status.stderr).toBe(2);
    expect(JSON.parse(status.stdout)).toMatchObject({ enrolled: false, bird: { reachable: false } });
  }, 60_000);

  it("--config: values from the file, the environment wins, a typo and a missing named file are refused", () => {
    const file = join(dir, "agent.env");
    writeFileSync(file, `# comment\nRL_STATE_DIR=${join(dir, "from-file")}\nexport RL_LOG_LEVEL="debug"\n`);
    const fromFile = environmentWithConfigFile({}, file);
    expect(fromFile).toMatchObject({ RL_STATE_DIR: join(dir, "from-file"), RL_LOG_LEVEL: "debug" });
    expect(environmentWithConfigFile({ RL_LOG_LEVEL: "warn" }, file)).toMatchObject({ RL_LOG_LEVEL: "warn", RL_STATE_DIR: join(dir, "from-file") });
    expect(() => parseConfigFile("RL_POLL_SECOND=5\n", "x.env")).toThrow("x.env:1: RL_POLL_SECOND is not a variable rl-agent reads");
    expect(() => environmentWithConfigFile({}, join(dir, "missing.env"))).toThrow("cannot read the configuration file");

    const run = agent(["status", "--json", "--config", file]);
    expect(JSON.parse(run.stdout)).toMatchObject({ enrolled: false });
    const typo = agent(["status", "--config", join(dir, "missing.env")]);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain("missing.env");
  }, 60_000);

  it("agent.env as packaged names every variable, commented out at its default, and parses as a config file", () => {
    expect(VARIABLES.map((v) => v.name).sort()).toEqual([...CONFIG_VARIABLES].sort());
    const text = envFileTemplate();
    for (const v of VARIABLES) expect(text).toContain(`\n#${v.name}=${v.default}\n`);
    expect(parseConfigFile(text, "agent.env")).toEqual({});
  });

  it("logs are pino lines, the controller's shape: numeric level, epoch-ms time, msg", () => {
    const lines: string[] = [];
    createLogger("info", (l) => lines.push(l)).info("applied", { revision_id: 4, node_key: "rlk_secret" });
    createLogger("info", (l) => lines.push(l)).debug("hidden");
    expect(lines).toHaveLength(1);
    const line = JSON.parse(lines[0] as string);
    expect(line).toMatchObject({ level: 30, msg: "applied", revision_id: 4, node_key: "[redacted]" });
    expect(typeof line.time).toBe("number");
    expect(line).toHaveProperty("pid");
  });
});
