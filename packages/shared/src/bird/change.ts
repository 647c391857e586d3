import { isAscii } from "node:buffer";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { readFileNoFollowSync } from "./atomic-file.js";
import { linesToCheck } from "./route-lines.js";
import { type ProcessRunner, validateBirdConfig } from "./validate.js";

// The validate step: which files differ from what BIRD runs, and `bird -p` on a scratch copy of
// the config as it will run. Nothing here touches the running files.

/** What the validate step reads: the rendered files and where they go. */
export interface ChangeOptions {
  /** File name → text, as renderBirdConfig gives them. */
  files: Record<string, string | Buffer>;
  /** The file BIRD reads first (renderBirdConfig's `entry`). */
  entry: string;
  /** `include`: the entry is included by the operator's bird.conf; `full`: it is bird.conf. */
  mode: "include" | "full";
  /** The directory of BIRD_CONFIG_PATH, where the files go. */
  configDir: string;
  /** Scratch space; best on the same file system as configDir. Each check uses a fresh subdirectory. */
  stagingDir: string;
  /**
   * Files whose `route` lines BIRD need not parse again when it runs them already (the static
   * protocols' files): `bird -p` is given each such file with its other lines and only the route
   * lines the running file lacks. BIRD's `configure` still reads every line, and refuses a config
   * that does not parse without changing what runs.
   */
  routeFiles?: (name: string) => boolean;
  /**
   * Files of an earlier apply that this one no longer has (a split render's static files): the
   * ones in configDir this matches and `files` lacks are removed once the new config is confirmed.
   */
  obsolete?: (name: string) => boolean;
}

/** A config `bird -p` accepted that differs from what runs: what the stage step swaps in. */
export interface ValidatedChange {
  options: ChangeOptions;
  /** The files whose bytes differ from the running ones, the entry last. */
  changed: string[];
  /** What each file held when it was read (null: none, a symlink, or unreadable). */
  running: Map<string, RunningFile | null>;
}

/**
 * A running file as it is now: its text when it is plain ASCII (every file we render is, but for
 * a password or a description; ASCII bytes read as Latin-1 are their UTF-8 text, a copy, where
 * decoding would cost a pass over every route), its bytes otherwise.
 */
export type RunningFile = string | Buffer;

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Compares the rendered files with the running ones and validates the new config with `bird -p`
 * on a scratch copy, so a config BIRD refuses never touches the running files (throws
 * BirdConfigError). Null when every file already holds these bytes: BIRD runs this config and
 * there is nothing to validate, stage or configure.
 */
export async function validateChange(deps: { runner: ProcessRunner; birdBin?: string }, options: ChangeOptions): Promise<ValidatedChange | null> {
  const names = Object.keys(options.files).sort((a, b) => Number(a === options.entry) - Number(b === options.entry));
  if (!names.includes(options.entry)) throw new TypeError(`entry ${options.entry} is not among the files`);
  for (const name of names) if (!FILE_NAME.test(name)) throw new TypeError(`${JSON.stringify(name)} is not a plain file name`);
  const changed: string[] = [];
  const running = new Map<string, RunningFile | null>();
  for (const name of names) {
    const file = readRunning(options.configDir, name);
    running.set(name, file);
    if (!holds(file, options.files[name] as string | Buffer)) changed.push(name);
  }
  if (changed.length === 0) return null;
  const changedSet = new Set(changed);
  await mkdir(options.stagingDir, { recursive: true, mode: 0o700 });
  const scratch = await mkdtemp(join(options.stagingDir, "apply-"));
  try {
    // What `bird -p` reads (the includes are relative, so all in one directory): each changed
    // file as it will run, but a route file with the route lines BIRD runs already left blank,
    // and links to the unchanged running files, which were just read and hold exactly these
    // bytes. What the stage step swaps in is written from the rendered text itself.
    for (const name of names) {
      const text = options.files[name] as string | Buffer;
      const was = running.get(name);
      // A running file an eighth the size of the new one or less (a first big apply) has too
      // few of its lines to be worth the comparison: the new one is checked whole.
      if (options.routeFiles?.(name) && typeof text === "string" && typeof was === "string" && was.length * 8 > text.length) {
        await writeFile(join(scratch, name), linesToCheck(text, was), { flag: "wx", mode: 0o600 });
      } else if (changedSet.has(name)) await writeFile(join(scratch, name), text, { flag: "wx", mode: 0o600 });
      else await symlink(resolve(options.configDir, name), join(scratch, name));
    }
    let check = join(scratch, options.entry);
    if (options.mode === "include") {
      // The include alone is not a config BIRD accepts when it has no protocol; a device
      // protocol in a wrapper makes it one, as the operator's bird.conf would.
      check = join(scratch, "rl-validate.conf");
      await writeFile(check, `protocol device {\n}\ninclude "${options.entry}";\n`, { flag: "wx", mode: 0o600 });
    }
    // bird -p took 0.64 s on 1,000,000 routes; the default 30 s leaves room for slow hosts.
    await validateBirdConfig(check, { runner: deps.runner, birdBin: deps.birdBin });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return { options, changed, running };
}

/** The file in `dir` as it is now; null when there is none, it is a symlink, or it cannot be read. */
function readRunning(dir: string, name: string): RunningFile | null {
  try {
    const bytes = readFileNoFollowSync(join(dir, name));
    return isAscii(bytes) ? bytes.toString("latin1") : bytes;
  } catch {
    return null;
  }
}

/** The running file holds exactly `text` (a symlink or anything unreadable does not). */
function holds(running: RunningFile | null, text: string | Buffer): boolean {
  if (running === null) return false;
  if (typeof text !== "string") return (typeof running === "string" ? Buffer.from(running, "latin1") : running).equals(text);
  return typeof running === "string" ? running === text : running.equals(Buffer.from(text, "utf8"));
}
