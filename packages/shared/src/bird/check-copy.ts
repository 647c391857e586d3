import { mkdir, mkdtemp, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type FileText, textToWrite } from "./atomic-file.js";

// The directory `bird -p` reads in the validate step (change.ts): the config as it will run,
// route files shortened, unchanged files linked. Kept between applies when the caller keeps a
// WrittenFiles, so that an apply writes only the files whose check text changed: writing and
// removing ~200 small files each time (a split render's community sets) cost more than
// everything else the step does on a 1 % change.

/** One file of the copy: a text, or a symlink to the running file. */
export type CheckFile = { text: FileText } | { link: string };

/** The copy of one config directory, kept in the staging directory between applies. */
export class CheckCopy {
  readonly #name: string;
  /** Where the copy is, and what each of its files holds (null: not made, or given up). */
  #dir: string | null = null;
  #files = new Map<string, CheckFile>();
  #busy = false;

  /** `name`: the copy's directory in the staging directory (one per config directory). */
  constructor(name: string) {
    this.#name = name;
  }

  /**
   * Runs `use` on a directory holding exactly `files`: the kept copy with what changed written
   * again, or a fresh one when this copy is in use (two checks at once) or cannot be brought
   * up to date. Once `use` resolved, the files of `next` are written too: what the next check
   * will most likely want (the files that changed, as they will run then).
   */
  async use<T>(stagingDir: string, files: Map<string, CheckFile>, use: (dir: string) => Promise<T>, next?: Map<string, CheckFile>): Promise<T> {
    if (this.#busy) return withFreshCopy(stagingDir, files, use);
    this.#busy = true;
    try {
      const dir = join(stagingDir, this.#name);
      // A copy left by an earlier process, or by a write that failed, is not trusted: made again.
      for (let attempt = 0; ; attempt++) {
        try {
          if (this.#dir !== dir) {
            this.#dir = null;
            await mkdir(stagingDir, { recursive: true, mode: 0o700 });
            await rm(dir, { recursive: true, force: true });
            await mkdir(dir, { mode: 0o700 });
            this.#files = new Map();
            this.#dir = dir;
          }
          await fill(dir, this.#files, files);
          break;
        } catch (error) {
          this.#dir = null;
          if (attempt > 0) throw error;
        }
      }
      const result = await use(dir);
      // Only a head start for the next check: a failure here leaves it to make the copy again.
      if (next) await fill(dir, this.#files, next, false).catch(() => void (this.#dir = null));
      return result;
    } finally {
      this.#busy = false;
    }
  }
}

/** `use` on a directory of its own, removed after. */
export async function withFreshCopy<T>(stagingDir: string, files: Map<string, CheckFile>, use: (dir: string) => Promise<T>): Promise<T> {
  await mkdir(stagingDir, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(stagingDir, "apply-"));
  try {
    await fill(dir, new Map(), files);
    return await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Brings `dir`, whose files are `had`, to `want` (and with `only`, removes the others): a file
 * is written again only when its text is another object (or its link another path).
 */
async function fill(dir: string, had: Map<string, CheckFile>, want: Map<string, CheckFile>, only = true): Promise<void> {
  for (const name of only ? [...had.keys()] : []) {
    if (want.has(name)) continue;
    had.delete(name);
    await unlink(join(dir, name));
  }
  for (const [name, file] of want) {
    const was = had.get(name);
    if (was && sameFile(was, file)) continue;
    const path = join(dir, name);
    had.delete(name);
    // Removed first, never written through: the old entry may be a link to a running file.
    if (was) await unlink(path);
    if ("link" in file) await symlink(file.link, path);
    else await writeFile(path, textToWrite(file.text), { flag: "wx", mode: 0o600 });
    had.set(name, file);
  }
}

function sameFile(a: CheckFile, b: CheckFile): boolean {
  return "link" in a ? "link" in b && a.link === b.link : "text" in b && a.text === b.text;
}
