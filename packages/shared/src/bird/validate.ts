import { readFile } from "node:fs/promises";
import { execa } from "execa";
import { birdErrorLine } from "./stderr.js";

export interface ProcessResult {
  /** Exit code; null when the process was killed (see `signal`). */
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** Killed because it outran its timeout. */
  timedOut?: boolean;
}

/** Runs a program and resolves with how it ended; rejects only when it could not start. */
export type ProcessRunner = (file: string, args: readonly string[], options?: { timeoutMs?: number; cwd?: string }) => Promise<ProcessResult>;

/**
 * The real runner, execa: no shell (arguments are never interpreted), SIGTERM at the timeout and
 * SIGKILL 2 s later if that is ignored, the child killed when the agent exits, output capped.
 */
export function createProcessRunner(): ProcessRunner {
  return async (file, args, options = {}) => {
    const result = await execa(file, [...args], {
      timeout: options.timeoutMs ?? 30_000,
      forceKillAfterDelay: 2000,
      cleanup: true,
      reject: false,
      stdin: "ignore",
      maxBuffer: 4 * 1024 * 1024,
      stripFinalNewline: false,
      ...(options.cwd ? { cwd: options.cwd } : {}),
    });
    // ENOENT, EACCES: it did not run at all, which no exit code describes.
    const startError = (result as { code?: unknown }).code;
    if (result.failed && result.exitCode === undefined && !result.signal && !result.timedOut && typeof startError === "string") {
      throw Object.assign(new Error(`${file}: ${result.shortMessage}`), { code: startError });
    }
    return {
      code: result.exitCode ?? null,
      signal: result.signal ?? null,
      stdout: String(result.stdout ?? ""),
      stderr: String(result.stderr ?? ""),
      timedOut: result.timedOut,
    };
  };
}

export interface BirdConfigLocation {
  file: string;
  line: number;
  /** BIRD's column: the last character of the token it stopped at, 1-based (0 = no token). */
  column: number;
}

/** A config BIRD refused, with BIRD's own message and the offending line under a caret. */
export class BirdConfigError extends Error {
  override name = "BirdConfigError";
  readonly code = "bird_config_invalid";
  readonly location: BirdConfigLocation | null;
  /** BIRD's message without the location, e.g. `syntax error, unexpected CF_SYM_UNDEFINED`. */
  readonly birdMessage: string;
  /** `file:line:col message`, the source line and a caret under the column. */
  readonly excerpt: string;

  constructor(birdMessage: string, location: BirdConfigLocation | null, excerpt: string) {
    super(location ? `${location.file}:${location.line}:${location.column} ${birdMessage}` : birdMessage);
    this.birdMessage = birdMessage;
    this.location = location;
    this.excerpt = excerpt;
  }
}

export interface ValidateOptions {
  runner: ProcessRunner;
  /** Default `bird` (from PATH). */
  birdBin?: string;
  timeoutMs?: number;
  /** Reads the offending file for the excerpt; default fs.readFile. */
  readText?: (path: string) => Promise<string>;
}

const LOCATED = /^(?:bird: )?(.+?):(\d+):(\d+) (.*)$/;

/**
 * `bird -p -c <file>`: BIRD parses the config (and every file it includes) and exits, silent
 * with 0 when it is good, 1 with `bird: <file>:<line>:<col> <message>` on stderr when not (BIRD 3
 * stamps the line, and 2.17 and 3.x may warn first: stderr.ts picks the error out).
 * Throws {@link BirdConfigError} when BIRD refuses the file.
 */
export async function validateBirdConfig(configPath: string, options: ValidateOptions): Promise<void> {
  const result = await options.runner(options.birdBin ?? "bird", ["-p", "-c", configPath], { timeoutMs: options.timeoutMs ?? 30_000 });
  if (result.code === 0) return;
  if (result.timedOut) {
    const stderr = birdErrorLine(result.stderr);
    throw new BirdConfigError(`bird -p did not finish within ${options.timeoutMs ?? 30_000} ms${stderr ? `: ${stderr}` : ""}`, null, "");
  }
  const line = birdErrorLine(result.stderr) || birdErrorLine(result.stdout);
  const error = parseBirdError(line || `bird -p exited with ${result.code ?? result.signal}`);
  let source: string | null = null;
  if (error.location) {
    source = await (options.readText ?? ((p: string) => readFile(p, "utf8")))(error.location.file).catch(() => null);
  }
  throw new BirdConfigError(error.message, error.location, formatExcerpt(error, source));
}

/** `bird: file:line:col message` (from `bird -p`) or `file:line:col message` (8002 over the socket). */
export function parseBirdError(text: string): { message: string; location: BirdConfigLocation | null } {
  const m = LOCATED.exec(text.trim());
  if (!m) return { message: text.trim().replace(/^bird: /, ""), location: null };
  return { message: m[4] as string, location: { file: m[1] as string, line: Number(m[2]), column: Number(m[3]) } };
}

/** `password "…"` in BIRD's syntax (strings have no escapes and end at the next quote or the line's end). */
const PASSWORD = /(\bpassword\s+")([^"]*)("?)/gi;

/**
 * The line with every password's text replaced by `***`, and the secrets it held. The excerpt
 * travels to the controller, where every viewer of the speaker reads it in `last_error`.
 */
export function maskSecrets(line: string): { text: string; secrets: string[]; column: (original: number) => number } {
  const secrets: string[] = [];
  // Where each secret stood in the original line, to move a column past it onto the masked one.
  const cuts: { start: number; length: number }[] = [];
  const text = line.replace(PASSWORD, (_all, head: string, secret: string, tail: string, offset: number) => {
    if (secret) secrets.push(secret);
    cuts.push({ start: offset + head.length, length: secret.length });
    return `${head}***${tail}`;
  });
  const column = (original: number) => {
    let shift = 0;
    for (const cut of cuts) {
      if (original >= cut.start + cut.length) shift += cut.length - 3;
      else if (original >= cut.start) return cut.start - shift;
    }
    return original - shift;
  };
  return { text, secrets, column };
}

/**
 * The message, the offending line and a caret under BIRD's column (tabs kept, so it lines up).
 * A line that holds a password is shown masked, and the password is cut out of BIRD's message
 * too; the caret then points at the masked line, which is as close as it can honestly get.
 */
export function formatExcerpt(error: { message: string; location: BirdConfigLocation | null }, source: string | null): string {
  const { location } = error;
  if (!location) return error.message;
  const line = source?.split("\n")[location.line - 1];
  const masked = line === undefined ? null : maskSecrets(line.replace(/\r$/, ""));
  let message = error.message;
  for (const secret of masked?.secrets ?? []) message = message.split(secret).join("***");
  const head = `${location.file}:${location.line}:${location.column} ${message}`;
  if (masked === null) return head;
  const text = masked.text;
  const number = String(location.line);
  const pad = " ".repeat(number.length);
  const column = Math.min(masked.column(Math.max(0, location.column - 1)), text.length);
  const before = text.slice(0, column).replace(/[^\t]/g, " ");
  return `${head}\n ${number} | ${text}\n ${pad} | ${before}^`;
}
