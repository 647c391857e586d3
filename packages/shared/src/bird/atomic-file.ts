import { randomBytes } from "node:crypto";
import { type BigIntStats, closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";
import { open, readFile, rename, stat, unlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * A file's text as the render gives it: a string, its bytes, or a {@link MadeText} (the route
 * files written from a section, kept as a token rather than as their bytes).
 */
export type FileText = string | Buffer | MadeText;

/**
 * A text that is not held, only made again when its bytes are needed: told from another by
 * identity, as long as its maker holds what makes it (null after: the caller then reads the file
 * that holds it, or takes it as changed).
 */
export interface MadeText {
  bytes(): Buffer | null;
  /**
   * A route file's text without its route lines, which are plain ASCII: `routes` of them, after
   * the text's line `routesAfterLine` (1-based). What the validate step needs to blank them all
   * (change.ts) without the text's bytes, which may be megabytes made again.
   */
  frame?(): { text: Buffer; routesAfterLine: number; routes: number };
}

/** The text as a string or bytes; null for a MadeText that can no longer be made. */
export function textData(text: FileText): string | Buffer | null {
  return typeof text === "string" || Buffer.isBuffer(text) ? text : text.bytes();
}

/** The text to write: as textData, but one that can no longer be made is a bug of the caller's. */
export function textToWrite(text: FileText): string | Buffer {
  const data = textData(text);
  if (data === null) throw new TypeError("a file's text was asked for after its maker let it go");
  return data;
}

/** Who may read a file the agent writes: its owner alone, or its owner and one group. */
export interface FileAccess {
  /** 0o600 or 0o640; applied after creation, so the umask does not change it. */
  mode: number;
  /** The group that may read (`bird`, so BIRD reads the config); null keeps the agent's own. */
  gid?: number | null;
}

/**
 * Writes `data` to `path` so that a reader (or the agent after a crash or power loss) sees the
 * old content or the new, whole: a temporary file beside it, fsync, rename over the target,
 * fsync of the directory so the rename itself is durable.
 *
 * The temporary name is random and opened with O_CREAT|O_EXCL (`wx`), so a file or symlink
 * planted there makes the write fail instead of being followed; the mode (and group) are set
 * on the open descriptor before a byte is written, so the content is never readable by more
 * than `access` allows, whatever the umask. rename replaces a symlink at `path` rather than
 * writing through it.
 *
 * `syncDirectory: false` leaves the directory's fsync to the caller: several files written side
 * by side then cost one ({@link syncDirectory}), and none of them is durable before it.
 *
 * Answers the written file's stat (through its descriptor, before the rename): what
 * WrittenFiles checks the name still holds.
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array,
  access: number | FileAccess,
  options: { syncDirectory?: boolean } = {},
): Promise<BigIntStats> {
  const { mode, gid = null } = typeof access === "number" ? { mode: access } : access;
  const dir = dirname(path);
  const temporary = join(dir, `.${basename(path)}.${randomBytes(8).toString("hex")}.tmp`);
  const file = await open(temporary, "wx", 0o600);
  let written: BigIntStats;
  try {
    if (gid !== null) await file.chown(-1, gid);
    await file.chmod(mode);
    await file.writeFile(data);
    await file.sync();
    written = await file.stat({ bigint: true });
  } catch (error) {
    await file.close();
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await file.close();
  try {
    await rename(temporary, path);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  if (options.syncDirectory !== false) await syncDirectory(dir);
  return written;
}

/** fsync of a directory: the renames into it so far survive a power loss. */
export async function syncDirectory(dir: string): Promise<void> {
  const directory = await open(dir, "r");
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/**
 * readFileNoFollow, blocking, with the file's stat taken through the same descriptor before the
 * read: for comparing the ~200 files of a split render with what runs, where four thread-pool
 * round trips a file (open, stat, read, close) cost more than the reading.
 */
export function readFileNoFollowSync(path: string): { bytes: Buffer; stat: BigIntStats } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const stat = fstatSync(fd, { bigint: true });
    return { bytes: readFileSync(fd), stat };
  } finally {
    closeSync(fd);
  }
}

/** Reads a file without following a symlink at `path` (ELOOP when there is one). */
export async function readFileNoFollow(path: string): Promise<Buffer> {
  const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await file.readFile();
  } finally {
    await file.close();
  }
}

/**
 * The id of group `name` from the group database, or null when there is none. Node has no
 * getgrnam; /etc/group is what it reads on the routers the agent runs on.
 */
export async function groupId(name: string, groupFile = "/etc/group"): Promise<number | null> {
  const text = await readFile(groupFile, "utf8").catch(() => "");
  for (const line of text.split("\n")) {
    const [group, , gid] = line.split(":");
    if (group === name && gid !== undefined && /^\d+$/.test(gid)) return Number(gid);
  }
  return null;
}

/**
 * How a file BIRD must read is written: 0640 with group `bird` when that group exists and the
 * agent may give files to it (it is a member, or root); 0600 otherwise, readable by BIRD only
 * when it runs as root or as the agent's user.
 */
export async function birdReadable(groupName = "bird", groupFile?: string): Promise<FileAccess> {
  const gid = await groupId(groupName, groupFile);
  const mayUse = gid !== null && (process.getuid?.() === 0 || process.getgid?.() === gid || (process.getgroups?.() ?? []).includes(gid));
  return mayUse ? { mode: 0o640, gid } : { mode: 0o600, gid: null };
}

export class UnsafeDirectoryError extends Error {
  override name = "UnsafeDirectoryError";
}

/**
 * Refuses a directory that someone else could write into (group or other write bit) or that
 * another user owns: whoever can, could plant a symlink or swap the node key the agent trusts.
 */
export async function assertPrivateDirectory(dir: string): Promise<void> {
  const info = await stat(dir);
  if (!info.isDirectory()) throw new UnsafeDirectoryError(`${dir} is not a directory`);
  const mode = info.mode & 0o777;
  if (mode & 0o022) {
    throw new UnsafeDirectoryError(
      `${dir} is writable by its group or by others (mode 0${mode.toString(8)}); the agent keeps its node key there: chmod 0700 ${dir}`,
    );
  }
  const uid = process.getuid?.();
  if (uid !== undefined && info.uid !== uid && info.uid !== 0) {
    throw new UnsafeDirectoryError(`${dir} belongs to user ${info.uid}, not to the agent's user ${uid} (nor root): chown it to the agent's user`);
  }
}
