import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { until } from "../helpers/wait.js";

// The built rlctl as an operator runs it: `node packages/controller/bin/rlctl.mjs …` in a
// process of its own, with a HOME and XDG_CONFIG_HOME of the test's own (so no profile of the
// machine's user leaks in) and none of the RL_* variables of the environment the tests run in.

const root = join(import.meta.dirname, "../..");
export const rlctlBin = join(root, "packages/controller/bin/rlctl.mjs");

/** Fails with what to do when the CLI has not been built (the tests run the built one). */
export function ensureRlctlBuilt(): void {
  if (!existsSync(join(root, "packages/controller/dist/rlctl/main.js")))
    throw new Error("packages/controller/dist/rlctl/main.js is missing: build first (npx turbo run build)");
}

export interface RlctlResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunningRlctl {
  stdout(): string;
  stderr(): string;
  signal(name: NodeJS.Signals): void;
  done: Promise<RlctlResult>;
}

/** A temporary HOME; its `.config` is the XDG_CONFIG_HOME the runs below get. */
export function tempHome(): { home: string; remove(): void } {
  const home = mkdtempSync(join(tmpdir(), "rlctl-home-"));
  return { home, remove: () => rmSync(home, { recursive: true, force: true }) };
}

function environment(home: string, env: Record<string, string>): NodeJS.ProcessEnv {
  const { RL_URL: _u, RL_API_KEY: _k, RL_PROFILE: _p, NO_COLOR: _n, FORCE_COLOR: _f, ...rest } = process.env;
  return { ...rest, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), ...env };
}

/** Starts rlctl; stdout and stderr are pipes (not terminals), so progress comes as lines. */
export function startRlctl(home: string, args: string[], env: Record<string, string> = {}, input?: string): RunningRlctl {
  const child = spawn(process.execPath, [rlctlBin, ...args], { env: environment(home, env), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  child.stdin.end(input ?? "");
  const done = new Promise<RlctlResult>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { stdout: () => stdout, stderr: () => stderr, signal: (name) => child.kill(name), done };
}

/** Runs rlctl to its end. */
export function rlctl(home: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<RlctlResult> {
  return startRlctl(home, args, env, input).done;
}

/** Runs rlctl and fails (showing its stderr) unless it exits 0. */
export async function rlctlOk(home: string, args: string[], env: Record<string, string> = {}, input?: string): Promise<RlctlResult> {
  const result = await rlctl(home, args, env, input);
  if (result.code !== 0) throw new Error(`rlctl ${args.join(" ")} exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return result;
}

/** Waits until a running rlctl has written something matching `pattern` to stderr. */
export async function untilStderr(run: RunningRlctl, pattern: RegExp, ms = 20_000): Promise<void> {
  await until(`rlctl to print ${pattern} on stderr`, async () => pattern.test(run.stderr()), ms, 50).catch((error: Error) => {
    throw new Error(`${error.message}; stderr so far: ${run.stderr()}`);
  });
}
