import type { Stats } from "node:fs";
import { constants, link, lstat, open, readdir, rename, unlink } from "node:fs/promises";
import { join } from "node:path";
import {
  birdReadable,
  type FileAccess,
  type FileText,
  readFileNoFollow,
  readFileNoFollowSync,
  syncDirectory,
  textToWrite,
  writeFileAtomic,
} from "./atomic-file.js";
import type { ValidatedChange } from "./change.js";
import { type SetAside, sameBytes, type WrittenFiles } from "./written-files.js";

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
 * Swaps in the files `bird -p` accepted: each running file set aside as a hard link (its inode
 * stays as it is: nothing is copied), then the new ones in, the entry last (it names the
 * others), each written whole under a temporary name and renamed, with the directory synced once
 * a batch. The files hold peers' passwords: BIRD's group may read them, nobody else.
 */
export async function stageFiles(change: ValidatedChange): Promise<StagedFiles> {
  const { options, changed } = change;
  const dir = options.configDir;
  const { written } = options;
  const access = await birdReadable();
  const apart = { syncDirectory: false };
  // What `written` knew of each file being replaced: known again when undo puts it back.
  const aside = new Map<string, SetAside>();
  for (const name of changed) {
    const entry = written?.take(name);
    if (entry) aside.set(name, entry);
  }
  const had = new Map<string, boolean>();
  await Promise.all(changed.map(async (name) => had.set(name, await backup(dir, name, access))));
  await syncDirectory(dir);
  const swap = async (name: string) => {
    const text = options.files[name] as FileText;
    const stat = await writeFileAtomic(join(dir, name), textToWrite(text), access, apart);
    const known = written?.recordWrite(name, text, stat);
    if (known && change.unchangedChecks.has(name)) known.unchangedCheck = change.unchangedChecks.get(name) ?? null;
  };
  await Promise.all(changed.filter((name) => name !== options.entry).map(swap));
  await syncDirectory(dir);
  if (changed.includes(options.entry)) {
    await swap(options.entry);
    await syncDirectory(dir);
  }
  return { change, restore: () => restoreFiles(dir, changed, had, aside, written) };
}

/** Files an earlier apply wrote that the confirmed one no longer includes, and their copies aside. */
export async function removeObsolete(staged: StagedFiles): Promise<void> {
  const { configDir: dir, files, obsolete, written } = staged.change.options;
  if (!obsolete) return;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (obsolete(name) && !(name in files)) {
      written?.forget(name);
      await unlink(join(dir, name)).catch(() => undefined);
    }
    if (name.endsWith(PREVIOUS_SUFFIX) && obsolete(name.slice(0, -PREVIOUS_SUFFIX.length))) await unlink(join(dir, name)).catch(() => undefined);
  }
}

/**
 * The names of `files` whose bytes in `dir` differ from theirs (other bytes, no file, a symlink).
 * A file `written` knows unchanged is not read; one read and found equal is recorded in it.
 */
export function differingFiles(dir: string, files: Record<string, FileText>, written?: WrittenFiles): string[] {
  written?.assertDir(dir);
  const differing: string[] = [];
  for (const [name, text] of Object.entries(files)) {
    const known = written?.known(name);
    if (known && sameBytes(known.text, text)) {
      if (known.text !== text) written?.adopt(name, text);
      continue;
    }
    const read = readOrNull(join(dir, name));
    if (read && sameBytes(read.bytes, text)) {
      written?.record(name, text, read.stat);
      continue;
    }
    differing.push(name);
  }
  return differing;
}

/**
 * Writes each of `names` (by default each of `files` whose bytes differ from what is in `dir`) as
 * the stage step writes them (whole, renamed, readable by BIRD's group only); nothing is
 * validated or configured. Answers whether any file was written.
 */
export async function writeDiffering(
  dir: string,
  files: Record<string, FileText>,
  written?: WrittenFiles,
  names = differingFiles(dir, files, written),
): Promise<boolean> {
  const access = await birdReadable();
  for (const name of names) {
    const text = files[name] as FileText;
    written?.forget(name);
    written?.recordWrite(name, text, await writeFileAtomic(join(dir, name), textToWrite(text), access));
  }
  return names.length > 0;
}

/** The file, not followed when it is a symlink; null when it cannot be read so (none, a symlink). */
function readOrNull(path: string): ReturnType<typeof readFileNoFollowSync> | null {
  try {
    return readFileNoFollowSync(path);
  } catch {
    return null;
  }
}

/** Errors of link(2) where a copy still works: another file system, or one without hard links. */
const NO_LINK = new Set(["EXDEV", "EPERM", "ENOTSUP", "EOPNOTSUPP", "EMLINK", "ENOSYS"]);

/**
 * Sets the running file aside under `<name>.rl-prev`: a hard link to it (a copy where links do
 * not work); false when there was none. Neither end follows a symlink: a link planted at the
 * running file's name is refused, one at the backup's name is replaced.
 */
async function backup(dir: string, name: string, access: FileAccess): Promise<boolean> {
  const path = join(dir, name);
  const previous = path + PREVIOUS_SUFFIX;
  let info: Stats;
  try {
    info = await lstat(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
  if (!info.isFile()) throw notAFile(path, info);
  await unlink(previous).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== "ENOENT") throw error;
  });
  try {
    // link(2) on Linux does not follow a symlink at `path`: were one swapped in since the
    // lstat, the backup would be that link, which is refused here.
    await link(path, previous);
    const linked = await lstat(previous);
    if (!linked.isFile()) {
      await unlink(previous).catch(() => undefined);
      throw notAFile(path, linked);
    }
    await restrict(previous, linked, access);
  } catch (error) {
    // No hard links here, or a file of another user's that may be linked but not restricted.
    if (!NO_LINK.has((error as NodeJS.ErrnoException).code ?? "")) throw error;
    await unlink(previous).catch(() => undefined);
    await writeFileAtomic(previous, await readFileNoFollow(path), access, { syncDirectory: false });
  }
  return true;
}

/**
 * The backup shares the running file's inode, mode and group: held to `access` like every file
 * written here when the running one was more open (someone else's file, an older agent's).
 */
async function restrict(path: string, info: Stats, access: FileAccess): Promise<void> {
  const gid = access.gid ?? null;
  if ((info.mode & 0o777) === access.mode && (gid === null || info.gid === gid)) return;
  const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    if (gid !== null) await file.chown(-1, gid);
    await file.chmod(access.mode);
  } finally {
    await file.close();
  }
}

function notAFile(path: string, info: Stats): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`${path} is ${info.isSymbolicLink() ? "a symlink" : "not a regular file"}: not set aside nor replaced`);
  error.code = info.isSymbolicLink() ? "ELOOP" : "EINVAL";
  error.path = path;
  return error;
}

/**
 * Each file back as it was: the backup renamed over the new one (a second restore finds none
 * and leaves the file), or the new file removed when there was none; the directory synced once.
 */
async function restoreFiles(
  dir: string,
  names: readonly string[],
  had: Map<string, boolean>,
  aside: Map<string, SetAside>,
  written?: WrittenFiles,
): Promise<void> {
  for (const name of [...names].reverse()) {
    const path = join(dir, name);
    written?.forget(name);
    if (!had.get(name)) {
      await unlink(path).catch(() => undefined);
      continue;
    }
    try {
      await rename(path + PREVIOUS_SUFFIX, path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") continue;
      throw error;
    }
    const entry = aside.get(name);
    if (entry) written?.putBack(name, entry);
  }
  await syncDirectory(dir);
}
