import { isAscii } from "node:buffer";
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { CodedError } from "../coded-error.js";
import type { Clock } from "../time.js";
import { birdReadable, type FileAccess, readFileNoFollow, readFileNoFollowSync, syncDirectory, writeFileAtomic } from "./atomic-file.js";
import { type BirdControl, BirdError, type BirdReply } from "./birdc.js";
import { BirdConfigError, formatExcerpt, type ProcessRunner, parseBirdError, validateBirdConfig } from "./validate.js";

export interface ApplyDeps {
  birdc: BirdControl;
  runner: ProcessRunner;
  clock: Clock;
  /** Default `bird` (from PATH). */
  birdBin?: string;
}

export interface ApplyOptions {
  /** File name → text, as renderBirdConfig gives them. */
  files: Record<string, string>;
  /** The file BIRD reads first (renderBirdConfig's `entry`). */
  entry: string;
  /** `include`: the entry is included by the operator's bird.conf; `full`: it is bird.conf. */
  mode: "include" | "full";
  /** The directory of BIRD_CONFIG_PATH, where the files go. */
  configDir: string;
  /** Scratch space; best on the same file system as configDir. Each apply uses a fresh subdirectory. */
  stagingDir: string;
  /** `configure timeout N`: BIRD reverts by itself unless confirmed within N seconds. */
  timeoutSeconds: number;
  /** How long BIRD may take to answer again after configure. Default 10 s. */
  answerTimeoutMs?: number;
  /**
   * How long `configure` itself may take: BIRD answers once it has parsed the new files.
   * Default 60 s; measured 1.4 s for 1,000,000 static routes (34 MB) on BIRD 2.0.12.
   */
  configureTimeoutMs?: number;
  /** Runs once the config validated, just before the files are swapped and BIRD reconfigured. */
  beforeConfigure?: () => Promise<void>;
  /**
   * Files whose `route` lines BIRD need not parse again when it runs them already (the static
   * protocols' files): `bird -p` is given each such file with its other lines and only the route
   * lines the running file lacks. BIRD's `configure` still reads every line, and refuses a config
   * that does not parse without changing what runs.
   */
  routeFiles?: (name: string) => boolean;
  /** Called once `bird -p` accepted the staged config, once the files are in place, and once BIRD answers again after configure. */
  onStep?: (step: "validated" | "swapped" | "configured") => void;
  /**
   * Files of an earlier apply that this one no longer has (a split render's static files): the
   * ones in configDir this matches and `files` lacks are removed once the new config is confirmed.
   */
  obsolete?: (name: string) => boolean;
}

/** A configuration BIRD runs on probation: confirm it, or undo it, or let BIRD revert. */
export interface PendingApply {
  /**
   * False when every file already held these bytes: BIRD runs this config, nothing was written,
   * validated or configured, and confirm and undo have nothing to do.
   */
  configured: boolean;
  /** BIRD's reply to `configure timeout`; null when nothing was configured. */
  reply: BirdReply | null;
  /** `configure confirm`. Throws `bird_reverted` when BIRD had already gone back (timeout). */
  confirm(): Promise<BirdReply>;
  /**
   * Puts the previous files back and sends `configure undo`; BIRD's reply says whether it went
   * back now (0021/0003/0004) or had nothing to undo (0019: its timer was first).
   */
  undo(): Promise<BirdReply>;
}

export type ApplyErrorCode = "bird_reload_failed" | "bird_reverted";

export class ApplyError extends CodedError<ApplyErrorCode> {
  override name = "ApplyError";
}

const PREVIOUS_SUFFIX = ".rl-prev";
const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * Validate → swap → `configure timeout` → wait until BIRD answers. Validation runs on the staged
 * copy, so a config BIRD refuses never touches the running files (throws BirdConfigError). Only
 * the files whose bytes changed are swapped in, each by rename, the entry last; when none
 * changed, BIRD already runs this config and nothing happens (`configured: false`). When `configure` fails
 * the previous files are put back, so the files on disk always match what BIRD runs or is about
 * to revert to. The caller watches BIRD for the probation window and then confirms or undoes.
 *
 * Note: when BIRD reverts on its own (nobody confirmed), it goes back in memory only; the new
 * files stay on disk until the next apply or `undo()`.
 */
export async function applyBirdConfig(deps: ApplyDeps, options: ApplyOptions): Promise<PendingApply> {
  const names = Object.keys(options.files).sort((a, b) => Number(a === options.entry) - Number(b === options.entry));
  if (!names.includes(options.entry)) throw new TypeError(`entry ${options.entry} is not among the files`);
  for (const name of names) if (!FILE_NAME.test(name)) throw new TypeError(`${JSON.stringify(name)} is not a plain file name`);
  const changed: string[] = [];
  /** What each file holds now, read once (null: none, a symlink, or unreadable). */
  const running = new Map<string, RunningFile | null>();
  for (const name of names) {
    const file = readRunning(options.configDir, name);
    running.set(name, file);
    if (!holds(file, options.files[name] as string)) changed.push(name);
  }
  const changedSet = new Set(changed);
  if (changed.length === 0) {
    const nothing = async (): Promise<BirdReply> => ({ code: 0, text: "", lines: [] });
    return { configured: false, reply: null, confirm: nothing, undo: nothing };
  }
  await mkdir(options.stagingDir, { recursive: true, mode: 0o700 });
  const staging = await mkdtemp(join(options.stagingDir, "apply-"));
  // The files hold peers' passwords: BIRD's group may read them, nobody else.
  const access = await birdReadable();
  try {
    // What `bird -p` reads (the includes are relative, so all in one directory): each changed
    // file as it will run, but a route file with the route lines BIRD runs already left blank,
    // and links to the unchanged running files, which were just read and hold exactly these
    // bytes. What is swapped in later is written from the rendered text itself.
    for (const name of names) {
      const text = options.files[name] as string;
      const was = running.get(name);
      // A running file an eighth the size of the new one or less (a first big apply) has too
      // few of its lines to be worth the comparison: the new one is checked whole.
      if (options.routeFiles?.(name) && typeof was === "string" && was.length * 8 > text.length) {
        await writeFile(join(staging, name), linesToCheck(text, was), { flag: "wx", mode: 0o600 });
      } else if (changedSet.has(name)) await writeFile(join(staging, name), text, { flag: "wx", mode: 0o600 });
      else await symlink(resolve(options.configDir, name), join(staging, name));
    }
    let check = join(staging, options.entry);
    if (options.mode === "include") {
      // The include alone is not a config BIRD accepts when it has no protocol; a device
      // protocol in a wrapper makes it one, as the operator's bird.conf would.
      check = join(staging, "rl-validate.conf");
      await writeFile(check, `protocol device {\n}\ninclude "${options.entry}";\n`, { flag: "wx", mode: 0o600 });
    }
    // bird -p took 0.64 s on 1,000,000 routes; the default 30 s leaves room for slow hosts.
    await validateBirdConfig(check, { runner: deps.runner, birdBin: deps.birdBin });
    options.onStep?.("validated");
    await options.beforeConfigure?.();

    // The running files aside, then the new ones in, the entry last (it names the others): each
    // written whole under a temporary name and renamed, with the directory synced once a batch.
    const dir = options.configDir;
    const apart = { syncDirectory: false };
    const had = new Map<string, boolean>();
    await Promise.all(changed.map(async (name) => had.set(name, await backup(dir, name, running.get(name) ?? null, access, apart))));
    await syncDirectory(dir);
    const restore = () => restoreFiles(dir, changed, had, access);
    const swap = (name: string) => writeFileAtomic(join(dir, name), options.files[name] as string, access, apart);
    await Promise.all(changed.filter((name) => name !== options.entry).map(swap));
    await syncDirectory(dir);
    if (changedSet.has(options.entry)) {
      await swap(options.entry);
      await syncDirectory(dir);
    }
    options.onStep?.("swapped");

    let reply: BirdReply;
    try {
      reply = await configure(deps.birdc, options.timeoutSeconds, options.configureTimeoutMs ?? 60_000);
      await waitForAnswer(deps, options.answerTimeoutMs ?? 10_000);
      options.onStep?.("configured");
    } catch (error) {
      // Whatever BIRD took in will be undone by its own timer, as nobody can confirm it now.
      await restore();
      throw error;
    }
    return {
      configured: true,
      reply,
      confirm: async () => {
        const r = await deps.birdc.command("configure confirm");
        // 0019 "Nothing to do": the timer had run out and BIRD is back on the old config.
        if (r.code === 19) throw new ApplyError("bird_reverted", "BIRD had already reverted the configuration (confirm came too late)");
        if (options.obsolete) await removeObsolete(options.configDir, options.files, options.obsolete);
        return r;
      },
      undo: async () => {
        await restore();
        return deps.birdc.command("configure undo");
      },
    };
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

async function configure(birdc: BirdControl, timeoutSeconds: number, timeoutMs: number): Promise<BirdReply> {
  const seconds = Math.max(1, Math.floor(timeoutSeconds));
  try {
    const reply = await birdc.command(`configure timeout ${seconds}`, { timeoutMs });
    // 0003 Reconfigured, 0004 in progress, 0005 queued; 0006 means BIRD is shutting down.
    if (reply.code === 6) throw new ApplyError("bird_reload_failed", `configure: ${reply.text}`);
    return reply;
  } catch (error) {
    // 8002: the config (e.g. the operator's bird.conf around our include) does not parse.
    if (error instanceof BirdError && error.birdCode === 8002 && error.reply) {
      const last = error.reply.lines.at(-1)?.text ?? "";
      const parsed = parseBirdError(last);
      const source = parsed.location ? await readText(parsed.location.file) : null;
      throw new BirdConfigError(parsed.message, parsed.location, formatExcerpt(parsed, source));
    }
    throw error;
  }
}

/** Polls `show status` until BIRD answers; reconfiguration may keep it busy for a moment. */
async function waitForAnswer(deps: ApplyDeps, timeoutMs: number): Promise<void> {
  const deadline = deps.clock.now() + timeoutMs;
  for (;;) {
    const left = deadline - deps.clock.now();
    try {
      await deps.birdc.command("show status", { timeoutMs: Math.max(100, left) });
      return;
    } catch (cause) {
      if (deps.clock.now() >= deadline) {
        throw new BirdError("bird_timeout", `BIRD did not answer within ${timeoutMs} ms after configure`, { cause });
      }
      await deps.clock.sleep(100);
    }
  }
}

/**
 * Copies the running file aside; false when there was none. Neither end follows a symlink: a
 * link planted at the running file's name is refused, one at the backup's name is replaced.
 */
async function backup(dir: string, name: string, read: RunningFile | null, access: FileAccess, options: { syncDirectory?: boolean } = {}): Promise<boolean> {
  // As just read (ASCII text is written as the same bytes); read here only when that read
  // failed, so that a missing file is told from a symlink or an unreadable one, which throw.
  let data: RunningFile;
  try {
    data = read ?? (await readFileNoFollow(join(dir, name)));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  await writeFileAtomic(join(dir, name + PREVIOUS_SUFFIX), data, access, options);
  return true;
}

/** Written beside the target under a random, exclusive name, then renamed over it (writeFileAtomic). */
async function swapIn(source: string, dir: string, name: string, access: FileAccess): Promise<void> {
  await writeFileAtomic(join(dir, name), await readFileNoFollow(source), access);
}

async function restoreFiles(dir: string, names: readonly string[], had: Map<string, boolean>, access: FileAccess): Promise<void> {
  for (const name of [...names].reverse()) {
    if (had.get(name)) await swapIn(join(dir, name + PREVIOUS_SUFFIX), dir, name, access);
    else await unlink(join(dir, name)).catch(() => undefined);
  }
}

/**
 * A running file as it is now: its text when it is plain ASCII (every file we render is, but for
 * a password or a description; ASCII bytes read as Latin-1 are their UTF-8 text, a copy, where
 * decoding would cost a pass over every route), its bytes otherwise.
 */
type RunningFile = string | Buffer;

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
function holds(running: RunningFile | null, text: string): boolean {
  if (running === null) return false;
  return typeof running === "string" ? running === text : running.equals(Buffer.from(text, "utf8"));
}

/**
 * `text` with the route lines `running` has too left blank: BIRD parsed those when it took the
 * running file, in the same protocol, so parsing them again tells nothing new. Every other line
 * stays where it was, so the check still sees each protocol, its channel and its filter as they
 * will run, and a refusal names the line of the real file.
 *
 * Half a million lines each side, in the same order but for what changed: each line is compared
 * character by character with the running file's next lines (`lookahead` of them), so a sparse
 * change costs one pass over both texts. After `misses` route lines in a row found nowhere near,
 * the running file's route lines go into a table by hash and every later line is looked up
 * there. No string is made a line (a Set of split lines took about a second).
 */
export function linesToCheck(text: string, running: string, tuning: { lookahead?: number; misses?: number } = {}): string {
  const lookahead = tuning.lookahead ?? 32;
  const maxMisses = tuning.misses ?? 64;
  // An unchanged file: every route line is one BIRD runs, and there is nothing to compare.
  const same = text === running;
  let table: LineTable | null = null;
  let misses = 0;
  /** Where the running file's next line starts (past its end: none left). */
  let next = 0;
  const out: string[] = [];
  /** Where the run of lines kept as they are starts, and how many blank lines wait to be written. */
  let keptFrom = 0;
  let blanks = 0;
  for (let at = 0; at <= text.length; ) {
    let end = text.indexOf("\n", at);
    if (end < 0) end = text.length;
    let known = false;
    if (isRouteLine(text, at, end)) {
      if (same) known = true;
      else if (table) known = table.has(text, at, end);
      else {
        const found = findNear(running, next, lookahead, text, at, end);
        if (found >= 0) {
          known = true;
          misses = 0;
          next = found;
        } else if (++misses > maxMisses) {
          table = new LineTable(running);
          known = table.has(text, at, end);
        }
      }
    } else if (!table && !same) {
      // A line of the protocol around the routes: the running file's copy of it is passed by too.
      const found = findNear(running, next, lookahead, text, at, end);
      if (found >= 0) next = found;
    }
    if (known) {
      if (keptFrom < at) {
        if (blanks > 0) out.push("\n".repeat(blanks));
        blanks = 0;
        out.push(text.slice(keptFrom, at));
      }
      // The line goes, its newline stays (the last line has none).
      if (end < text.length) blanks++;
      keptFrom = end + 1;
    }
    at = end + 1;
  }
  if (blanks > 0) out.push("\n".repeat(blanks));
  if (keptFrom < text.length) out.push(text.slice(keptFrom));
  return out.join("");
}

/**
 * Among the `lines` lines of `s` from `from`, the one equal to `t[at, end)`: where the line after
 * it starts, or -1.
 */
function findNear(s: string, from: number, lines: number, t: string, at: number, end: number): number {
  const length = end - at;
  for (let k = 0, p = from; k < lines && p <= s.length; k++) {
    let e = s.indexOf("\n", p);
    if (e < 0) e = s.length;
    if (e - p === length) {
      let i = 0;
      while (i < length && s.charCodeAt(p + i) === t.charCodeAt(at + i)) i++;
      if (i === length) return e + 1;
    }
    p = e + 1;
  }
  return -1;
}

/** `route` after the line's leading blanks, then a blank: a static route statement. */
function isRouteLine(s: string, at: number, end: number): boolean {
  let i = at;
  while (i < end && (s.charCodeAt(i) === 32 || s.charCodeAt(i) === 9)) i++;
  if (!s.startsWith("route", i) || i + 5 >= end) return false;
  const c = s.charCodeAt(i + 5);
  return c === 32 || c === 9;
}

function hashLine(s: string, at: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = at; i < end; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The route lines of one text, found by their characters (open addressing over their offsets). */
class LineTable {
  readonly #s: string;
  readonly #mask: number;
  /** Offset + 1 of a line's start (0: empty slot), its end, and its hash. */
  readonly #start: Int32Array;
  readonly #end: Int32Array;
  readonly #hash: Uint32Array;

  constructor(s: string) {
    this.#s = s;
    let lines = 1;
    for (let i = s.indexOf("\n"); i >= 0; i = s.indexOf("\n", i + 1)) lines++;
    let size = 16;
    while (size < lines * 2) size *= 2;
    this.#mask = size - 1;
    this.#start = new Int32Array(size);
    this.#end = new Int32Array(size);
    this.#hash = new Uint32Array(size);
    for (let at = 0; at <= s.length; ) {
      let end = s.indexOf("\n", at);
      if (end < 0) end = s.length;
      if (isRouteLine(s, at, end)) this.#add(at, end);
      at = end + 1;
    }
  }

  #add(at: number, end: number): void {
    const h = hashLine(this.#s, at, end);
    let slot = h & this.#mask;
    while (this.#start[slot] !== 0) slot = (slot + 1) & this.#mask;
    this.#start[slot] = at + 1;
    this.#end[slot] = end;
    this.#hash[slot] = h;
  }

  /** Whether the line `t[at, end)` is one of this text's route lines, character for character. */
  has(t: string, at: number, end: number): boolean {
    const h = hashLine(t, at, end);
    const length = end - at;
    for (let slot = h & this.#mask; this.#start[slot] !== 0; slot = (slot + 1) & this.#mask) {
      if (this.#hash[slot] !== h) continue;
      const from = this.#start[slot]! - 1;
      if (this.#end[slot]! - from !== length) continue;
      let k = 0;
      while (k < length && this.#s.charCodeAt(from + k) === t.charCodeAt(at + k)) k++;
      if (k === length) return true;
    }
    return false;
  }
}

/** Files an earlier apply wrote that the confirmed one no longer includes. */
async function removeObsolete(dir: string, files: Record<string, string>, obsolete: (name: string) => boolean): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (obsolete(name) && !(name in files)) await unlink(join(dir, name)).catch(() => undefined);
    if (name.endsWith(PREVIOUS_SUFFIX) && obsolete(name.slice(0, -PREVIOUS_SUFFIX.length))) await unlink(join(dir, name)).catch(() => undefined);
  }
}

async function readText(path: string): Promise<string | null> {
  return readFile(path, "utf8").catch(() => null);
}
