import { isAscii } from "node:buffer";
import type { BigIntStats } from "node:fs";
import { join, resolve } from "node:path";
import { type FileText, readFileNoFollowSync, textData } from "./atomic-file.js";
import { type CheckFile, withFreshCopy } from "./check-copy.js";
import type { CheckText } from "./render/section-statics.js";
import { linesToCheck } from "./route-lines.js";
import { type ProcessRunner, validateBirdConfig } from "./validate.js";
import { type KnownFile, sameBytes, type WrittenFiles } from "./written-files.js";

// The validate step: which files differ from what BIRD runs, and `bird -p` on a scratch copy of
// the config as it will run. Nothing here touches the running files.

/** What the validate step reads: the rendered files and where they go. */
export interface ChangeOptions {
  /** File name → text (a string is written as UTF-8), as renderBirdConfig gives them. */
  files: Record<string, FileText>;
  /** The file BIRD reads first (renderBirdConfig's `entry`). */
  entry: string;
  /** `include`: the entry is included by the operator's bird.conf; `full`: it is bird.conf. */
  mode: "include" | "full";
  /** The directory of BIRD_CONFIG_PATH, where the files go. */
  configDir: string;
  /** Scratch space; best on the same file system as configDir. Each check uses a fresh subdirectory. */
  stagingDir: string;
  /**
   * What this process last wrote or read in configDir (one per directory, kept by the caller):
   * a file it holds whose stat did not change is not read again, and the stage step records
   * what it writes there. Without it every file is read and compared.
   */
  written?: WrittenFiles;
  /**
   * Files whose `route` lines BIRD need not parse again when it runs them already (the static
   * protocols' files): `bird -p` is given each such file with its other lines and only the route
   * lines the running file lacks. BIRD's `configure` still reads every line, and refuses a config
   * that does not parse without changing what runs.
   */
  routeFiles?: (name: string) => boolean;
  /**
   * For a route file, what `bird -p` reads instead of the file when the renderer knows which of
   * its routes are new: used only when `written` knows the running file holds exactly `against`
   * (`===`: the same object, or a string of the same characters), else the file is compared
   * line by line as without it.
   */
  checkTexts?: Record<string, CheckText>;
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
  /**
   * For each changed route file (when the caller keeps a WrittenFiles): what `bird -p` is to read
   * of it once it runs, every route line blank (null: the file whole). The stage step keeps it
   * with the file's entry.
   */
  unchangedChecks: Map<string, string | null>;
}

const FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** The check's config in `include` mode: a device protocol, and the include. */
const WRAPPER = "rl-validate.conf";

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
  const { written } = options;
  written?.assertDir(options.configDir);
  const changed: string[] = [];
  /** What each changed file holds now (null: none, a symlink, or unreadable), and whether `written` vouched for it. */
  const running = new Map<string, { text: FileText | null; known: boolean }>();
  /** The unchanged files `written` knows: where the check text of an unchanged route file is kept. */
  const unchanged = new Map<string, KnownFile>();
  for (const name of names) {
    const text = options.files[name] as FileText;
    const known = written?.known(name) ?? null;
    if (known) {
      // The file holds these bytes as this process wrote or read them: not read again.
      if (known.text === text || sameBytes(known.text, text)) {
        unchanged.set(name, known.text === text ? known : (written?.adopt(name, text) ?? known));
        continue;
      }
      changed.push(name);
      running.set(name, { text: known.text, known: true });
      continue;
    }
    const read = readRunning(options.configDir, name);
    if (read && sameBytes(typeof text === "string" ? read.text : read.bytes, text)) {
      const recorded = written?.record(name, text, read.stat);
      if (recorded) unchanged.set(name, recorded);
      continue;
    }
    written?.forget(name);
    changed.push(name);
    running.set(name, { text: read?.text ?? null, known: false });
  }
  if (changed.length === 0) return null;
  // What `bird -p` reads (the includes are relative, so all in one directory): each changed
  // file as it will run, but a route file with the route lines BIRD runs already left blank,
  // and links to the unchanged running files, which hold exactly these bytes. What the stage
  // step swaps in is written from the rendered text itself.
  const copy = new Map<string, CheckFile>();
  for (const name of names) {
    const text = options.files[name] as FileText;
    const isRoutes = options.routeFiles?.(name) ?? false;
    const was = running.get(name);
    let check: FileText | null;
    if (was) check = isRoutes ? changedCheck(text, was, options.checkTexts?.[name], () => readRunning(options.configDir, name)?.text ?? null) : text;
    else check = isRoutes ? unchangedCheck(text, unchanged.get(name) ?? null) : null;
    copy.set(name, check === null ? { link: resolve(options.configDir, name) } : { text: check });
  }
  let entry = options.entry;
  if (options.mode === "include") {
    // The include alone is not a config BIRD accepts when it has no protocol; a device
    // protocol in a wrapper makes it one, as the operator's bird.conf would.
    entry = WRAPPER;
    if (copy.has(WRAPPER)) throw new TypeError(`${WRAPPER} is the name of the check's own wrapper`);
    copy.set(WRAPPER, { text: `protocol device {\n}\ninclude "${options.entry}";\n` });
  }
  // What each changed file will be in the check of the next apply, when it runs unchanged then:
  // made now, while this apply pays for the file anyway, so that the next one costs what it
  // changes (after a full apply, that is every file).
  const unchangedChecks = new Map<string, string | null>();
  const next = new Map<string, CheckFile>();
  if (written) {
    for (const name of changed) {
      const after = options.routeFiles?.(name) ? allRoutesBlank(options.files[name] as FileText) : null;
      if (options.routeFiles?.(name)) unchangedChecks.set(name, after);
      next.set(name, after === null ? { link: resolve(options.configDir, name) } : { text: after });
    }
  }
  // bird -p took 0.64 s on 1,000,000 routes; the default 30 s leaves room for slow hosts.
  const check = (dir: string) => validateBirdConfig(join(dir, entry), { runner: deps.runner, birdBin: deps.birdBin });
  if (written) await written.checkCopy.use(options.stagingDir, copy, check, next);
  else await withFreshCopy(options.stagingDir, copy, check);
  return { options, changed, unchangedChecks };
}

/**
 * What `bird -p` reads of a changed route file: the renderer's check text when it was made
 * against what the file holds (by identity, and `written` vouched for the file); else the text
 * with the route lines the running file has too left blank; else (a first big apply, a file
 * that is not ASCII) the text whole. `read`: the running file's text, for a known one whose
 * text is a MadeText no longer made (the file holds it: `written` vouched for it).
 */
function changedCheck(text: FileText, was: { text: FileText | null; known: boolean }, given: CheckText | undefined, read: () => FileText | null): FileText {
  if (given && was.known && given.against === was.text) return given.text;
  const now = asciiString(text);
  const held = was.text === null ? null : (textData(was.text) ?? read());
  const running = held === null ? null : asciiString(held);
  // A running file an eighth the size of the new one or less (a first big apply) has too few
  // of its lines to be worth the comparison: the new one is checked whole.
  if (now === null || running === null || running.length * 8 <= now.length) return text;
  return linesToCheck(now, running);
}

/**
 * What `bird -p` reads of a route file that runs unchanged: its protocol, every route line left
 * blank (BIRD parsed them all when it took the file), kept with the file's entry in `written` so
 * an unchanged set costs nothing the next time. Null (a link to the running file, read whole)
 * when the text is not ASCII.
 */
function unchangedCheck(text: FileText, known: KnownFile | null): string | null {
  if (known?.text === text && known.unchangedCheck !== undefined) return known.unchangedCheck;
  const check = allRoutesBlank(text);
  if (known?.text === text) known.unchangedCheck = check;
  return check;
}

/**
 * linesToCheck(text, text) of a text that is plain ASCII, else null: from its frame when it has
 * one (the route file's head and end; its routes, whose lines are all blank, are only counted),
 * not from the text itself, which would be a string of ~7 MB for 240k routes.
 */
export function allRoutesBlank(text: FileText): string | null {
  const frame = typeof text === "object" && !Buffer.isBuffer(text) ? text.frame?.() : undefined;
  if (frame) {
    const ascii = asciiString(frame.text);
    if (ascii === null) return null;
    const framed = linesToCheck(ascii, ascii);
    // The routes' blank lines go after the frame's line `routesAfterLine`, newline and all.
    let at = 0;
    for (let line = 0; line < frame.routesAfterLine && at >= 0; line++) {
      const newline = framed.indexOf("\n", at);
      at = newline < 0 ? -1 : newline + 1;
    }
    if (at >= 0) return `${framed.slice(0, at)}${"\n".repeat(frame.routes)}${framed.slice(at)}`;
  }
  const ascii = asciiString(text);
  return ascii === null ? null : linesToCheck(ascii, ascii);
}

/**
 * A text as a string linesToCheck can walk: itself, or bytes that are plain ASCII read as
 * Latin-1 (their UTF-8 text, a copy, where decoding would cost a pass over every route); null
 * for other bytes, which are then checked whole.
 */
function asciiString(text: FileText): string | null {
  const data = textData(text);
  if (data === null || typeof data === "string") return data;
  return isAscii(data) ? data.toString("latin1") : null;
}

/**
 * The file in `dir` as it is now, with its stat; null when there is none, it is a symlink, or it
 * cannot be read. Its text is a string when it is plain ASCII (every file we render is, but for
 * a password or a description), its bytes otherwise.
 */
function readRunning(dir: string, name: string): { bytes: Buffer; text: FileText; stat: BigIntStats } | null {
  try {
    const { bytes, stat } = readFileNoFollowSync(join(dir, name));
    return { bytes, text: isAscii(bytes) ? bytes.toString("latin1") : bytes, stat };
  } catch {
    return null;
  }
}
