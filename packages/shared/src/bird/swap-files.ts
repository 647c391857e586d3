import { readdir, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import { birdReadable, type FileAccess, readFileNoFollow, syncDirectory, writeFileAtomic } from "./atomic-file.js";
import type { RunningFile, ValidatedChange } from "./change.js";

// The stage step, and every other write of BIRD's files: the running files aside, the new ones
// in (each written whole and renamed), the previous ones back on undo, the obsolete ones out on
// confirm, and the confirmed ones back after a crash.

const PREVIOUS_SUFFIX = ".rl-prev";

/** The new files in place, the previous ones kept beside them until confirm or undo. */
export interface StagedFiles {
  change: ValidatedChange;
  /** Puts the previous files back (and removes the new ones that had none). */
  restore(): Promise<void>;
}

/**
 * Swaps in the files `bird -p` accepted: the running ones copied aside, then the new ones in,
 * the entry last (it names the others), each written whole under a temporary name and renamed,
 * with the directory synced once a batch. The files hold peers' passwords: BIRD's group may read
 * them, nobody else.
 */
export async function stageFiles(change: ValidatedChange): Promise<StagedFiles> {
  const { options, changed, running } = change;
  const dir = options.configDir;
  const access = await birdReadable();
  const apart = { syncDirectory: false };
  const had = new Map<string, boolean>();
  await Promise.all(changed.map(async (name) => had.set(name, await backup(dir, name, running.get(name) ?? null, access, apart))));
  await syncDirectory(dir);
  const swap = (name: string) => writeFileAtomic(join(dir, name), options.files[name] as string | Buffer, access, apart);
  await Promise.all(changed.filter((name) => name !== options.entry).map(swap));
  await syncDirectory(dir);
  if (changed.includes(options.entry)) {
    await swap(options.entry);
    await syncDirectory(dir);
  }
  return { change, restore: () => restoreFiles(dir, changed, had, access) };
}

/** Files an earlier apply wrote that the confirmed one no longer includes, and their copies aside. */
export async function removeObsolete(staged: StagedFiles): Promise<void> {
  const { configDir: dir, files, obsolete } = staged.change.options;
  if (!obsolete) return;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (obsolete(name) && !(name in files)) await unlink(join(dir, name)).catch(() => undefined);
    if (name.endsWith(PREVIOUS_SUFFIX) && obsolete(name.slice(0, -PREVIOUS_SUFFIX.length))) await unlink(join(dir, name)).catch(() => undefined);
  }
}

/**
 * Writes each of `files` into `dir` whose text differs from what is there, as the stage step
 * writes them (whole, renamed, readable by BIRD's group only); nothing is validated or
 * configured. Answers whether any file was written.
 */
export async function writeDiffering(dir: string, files: Record<string, string | Buffer>): Promise<boolean> {
  let written = false;
  const access = await birdReadable();
  for (const [name, text] of Object.entries(files)) {
    const path = join(dir, name);
    const now = await readFile(path).catch(() => null);
    if (now?.equals(typeof text === "string" ? Buffer.from(text, "utf8") : text)) continue;
    await writeFileAtomic(path, text, access);
    written = true;
  }
  return written;
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
