/**
 * The filesystem half of runtime logs: list, tail, cleanup and automatic cleanup of `*.log` files
 * in one directory. The directory is passed in by the caller; nothing here reads the environment
 * or the database.
 *
 * Safety invariants, which every function keeps:
 * - A path is only ever `path.join(dir, name)` with `isValidLogName(name)` true, so it names an
 *   entry of `dir` itself (no "/" and no leading "." are possible).
 * - An entry is lstat'ed before it is opened, so a FIFO or device is never opened (opening one
 *   can block or have side effects), and it is opened with O_NOFOLLOW, so a symlink swapped in
 *   after the lstat is refused by the kernel (ELOOP) instead of followed. The opened handle is
 *   fstat'ed and must be a regular file; size checks, reads and truncation use that handle.
 * - Delete unlinks only after an lstat shows the entry is still the very inode that was opened
 *   and measured. Should the entry be swapped after that, unlink removes the swapped-in symlink
 *   itself (unlink never follows) or fails on a directory; nothing outside `dir` is touched.
 */
import { constants as fsConstants } from "node:fs";
import { type FileHandle, lstat, open, readdir, unlink } from "node:fs/promises";
import path from "node:path";
import { InvalidLogRequestError, LogDirUnavailableError, LogFileNotFoundError, LogFileTooLargeError } from "./runtime-log-errors.js";
import { tailLines } from "./runtime-log-tail.js";

export const LOG_NAME_PATTERN = /^[a-z0-9][a-z0-9_.-]*\.log$/;

/** The largest file the DELETE cleanup handles: 512 MiB. */
export const MAX_CLEANUP_BYTES = 512 * 1024 * 1024;

/** Defaults and ranges of the tail query. */
export const TAIL_LIMITS = {
  lines: { default: 200, min: 1, max: 10_000 },
  bytes: { default: 65_536, min: 1, max: 8_388_608 },
  grep: { minChars: 1, maxChars: 256 },
} as const;

export type CleanupMode = "truncate" | "delete";

export interface LogFileInfo {
  name: string;
  size: number;
  /** RFC 3339 with milliseconds, UTC. */
  mtime: string;
}

export interface LogFileList {
  items: LogFileInfo[];
  total_bytes: number;
}

export interface TailOptions {
  lines?: number | undefined;
  bytes?: number | undefined;
  grep?: string | undefined;
}

export interface LogTail extends LogFileInfo {
  lines: string[];
  truncated: boolean;
}

export interface CleanupResult {
  bytes_before: number;
  bytes_after: number;
}

export interface AutoCleanupEstimate {
  threshold_bytes: number;
  files: LogFileInfo[];
  total_bytes: number;
}

export interface AutoCleanupOptions {
  thresholdBytes: number;
  mode: CleanupMode;
  dryRun?: boolean;
  /**
   * Files bigger than this are not cleaned. No limit by default: the 512 MiB cap is for the
   * DELETE route only, and an automatic run exists precisely for files that grew too big.
   */
  maxBytes?: number;
}

export interface AutoCleanupItem {
  name: string;
  mode: CleanupMode;
  bytes_before: number;
  /** 0 for a dry run (what would remain); equal to bytes_before when the cleanup failed. */
  bytes_after: number;
  result: "ok" | "failed" | "dry_run";
  /** The error code (e.g. `not_found`, `file_too_large`, an errno code such as `EACCES`, else `internal`). */
  error: string | null;
}

export interface AutoCleanupRun {
  dry_run: boolean;
  cleaned: AutoCleanupItem[];
  freed_bytes: number;
}

/** A base name of a runtime log: `^[a-z0-9][a-z0-9_.-]*\.log$`, at most 255 bytes (NAME_MAX). */
export function isValidLogName(name: unknown): name is string {
  return typeof name === "string" && name.length <= 255 && LOG_NAME_PATTERN.test(name);
}

/** Regular files with a valid name, sorted by name; symlinks, directories and others are left out. */
export async function listLogFiles(dir: string): Promise<LogFileList> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (isErrno(error, "ENOENT", "ENOTDIR", "EACCES")) throw new LogDirUnavailableError({ cause: error });
    throw error;
  }
  const items: LogFileInfo[] = [];
  for (const name of names.filter(isValidLogName).sort()) {
    let stats: Awaited<ReturnType<typeof lstat>>;
    try {
      stats = await lstat(path.join(dir, name));
    } catch (error) {
      if (isErrno(error, "ENOENT")) continue; // removed since readdir
      throw error;
    }
    if (stats.isFile()) items.push({ name, size: stats.size, mtime: stats.mtime.toISOString() });
  }
  return { items, total_bytes: sum(items.map((item) => item.size)) };
}

/** The end of one log file; see runtime-log-tail.ts for how lines, bytes and grep combine. */
export async function tailLogFile(dir: string, name: string, options: TailOptions = {}): Promise<LogTail> {
  assertValidName(name);
  const lines = intInRange("lines", options.lines ?? TAIL_LIMITS.lines.default, TAIL_LIMITS.lines);
  const bytes = intInRange("bytes", options.bytes ?? TAIL_LIMITS.bytes.default, TAIL_LIMITS.bytes);
  const grep = options.grep;
  if (grep !== undefined) {
    const chars = typeof grep === "string" && grep.length <= 4 * TAIL_LIMITS.grep.maxChars ? [...grep].length : -1;
    if (chars < TAIL_LIMITS.grep.minChars || chars > TAIL_LIMITS.grep.maxChars) {
      throw new InvalidLogRequestError("grep", "grep must be 1 to 256 characters");
    }
  }

  const { handle, size, mtime } = await openLogFile(dir, name, fsConstants.O_RDONLY);
  try {
    const tail = await tailLines(handle, size, { lines, bytes, grep });
    return { name, size, mtime, ...tail };
  } finally {
    await handle.close();
  }
}

/**
 * Empties (`truncate`) or removes (`delete`) one log file. Refuses a file over `maxBytes`
 * (default 512 MiB) with file_too_large and leaves it as it is. Truncate is the default of the
 * route because a writer keeping the file open would still hold the space of a deleted file.
 */
export async function cleanupLogFile(dir: string, name: string, mode: CleanupMode, options: { maxBytes?: number } = {}): Promise<CleanupResult> {
  assertValidName(name);
  if (mode !== "truncate" && mode !== "delete") throw new InvalidLogRequestError("mode", "mode must be truncate or delete");
  const maxBytes = options.maxBytes ?? MAX_CLEANUP_BYTES;

  const flags = mode === "truncate" ? fsConstants.O_WRONLY : fsConstants.O_RDONLY;
  const { handle, size, ino, dev } = await openLogFile(dir, name, flags);
  try {
    if (size > maxBytes) throw new LogFileTooLargeError(name, size, maxBytes);
    if (mode === "truncate") {
      await handle.truncate(0);
      // A writer may have appended already; report what is really there.
      return { bytes_before: size, bytes_after: (await handle.stat()).size };
    }
    const file = path.join(dir, name);
    const entry = await lstat(file).catch((error: unknown) => {
      throw notFoundOr(error, name);
    });
    if (!entry.isFile() || entry.ino !== ino || entry.dev !== dev) throw new LogFileNotFoundError(name);
    await unlink(file).catch((error: unknown) => {
      throw notFoundOr(error, name);
    });
    return { bytes_before: size, bytes_after: 0 };
  } finally {
    await handle.close();
  }
}

/** Log files strictly larger than `thresholdBytes`, sorted by name. */
export async function estimateAutoCleanup(dir: string, thresholdBytes: number): Promise<AutoCleanupEstimate> {
  if (!Number.isSafeInteger(thresholdBytes) || thresholdBytes < 1) {
    throw new InvalidLogRequestError("threshold_bytes", "threshold_bytes must be an integer of at least 1");
  }
  const { items } = await listLogFiles(dir);
  const files = items.filter((item) => item.size > thresholdBytes);
  return { threshold_bytes: thresholdBytes, files, total_bytes: sum(files.map((file) => file.size)) };
}

/**
 * Cleans every file of the estimate, one by one; a failing file is recorded and the run goes on.
 * A dry run opens nothing and changes nothing: it reports what a run would do from the listing.
 */
export async function runAutoCleanup(dir: string, options: AutoCleanupOptions): Promise<AutoCleanupRun> {
  const { mode, dryRun = false, maxBytes = Number.POSITIVE_INFINITY } = options;
  if (mode !== "truncate" && mode !== "delete") throw new InvalidLogRequestError("mode", "mode must be truncate or delete");
  const { files } = await estimateAutoCleanup(dir, options.thresholdBytes);

  const cleaned: AutoCleanupItem[] = [];
  let freed = 0;
  for (const file of files) {
    const item: AutoCleanupItem = { name: file.name, mode, bytes_before: file.size, bytes_after: file.size, result: "failed", error: null };
    if (file.size > maxBytes) {
      item.error = "file_too_large";
    } else if (dryRun) {
      item.bytes_after = 0;
      item.result = "dry_run";
    } else {
      try {
        const result = await cleanupLogFile(dir, file.name, mode, { maxBytes });
        item.bytes_before = result.bytes_before;
        item.bytes_after = result.bytes_after;
        item.result = "ok";
      } catch (error) {
        item.error = errorCode(error);
      }
    }
    if (item.result !== "failed") freed += Math.max(0, item.bytes_before - item.bytes_after);
    cleaned.push(item);
  }
  return { dry_run: dryRun, cleaned, freed_bytes: freed };
}

interface OpenedLogFile {
  handle: FileHandle;
  size: number;
  mtime: string;
  ino: number;
  dev: number;
}

/** Opens `dir/name` as the module comment requires; the caller closes the handle. */
async function openLogFile(dir: string, name: string, accessFlags: number): Promise<OpenedLogFile> {
  const { O_NOFOLLOW, O_NONBLOCK } = fsConstants;
  // Without O_NOFOLLOW (Windows) the symlink guarantee would silently vanish.
  if (O_NOFOLLOW === undefined || O_NONBLOCK === undefined) throw new Error("runtime logs need O_NOFOLLOW and O_NONBLOCK");
  const file = path.join(dir, name);

  const entry = await lstat(file).catch((error: unknown) => {
    throw notFoundOr(error, name);
  });
  if (!entry.isFile()) throw new LogFileNotFoundError(name);

  // O_NONBLOCK: should a FIFO be swapped in after the lstat, open returns at once (and fstat refuses it).
  const handle = await open(file, accessFlags | O_NOFOLLOW | O_NONBLOCK).catch((error: unknown) => {
    throw notFoundOr(error, name);
  });
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new LogFileNotFoundError(name);
    return { handle, size: stats.size, mtime: stats.mtime.toISOString(), ino: stats.ino, dev: stats.dev };
  } catch (error) {
    await handle.close();
    throw error;
  }
}

function assertValidName(name: unknown): asserts name is string {
  if (!isValidLogName(name)) {
    throw new InvalidLogRequestError("filename", "filename must be a base name matching ^[a-z0-9][a-z0-9_.-]*\\.log$");
  }
}

function intInRange(field: string, value: number, range: { min: number; max: number }): number {
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw new InvalidLogRequestError(field, `${field} must be an integer from ${range.min} to ${range.max}`);
  }
  return value;
}

/** Errno codes meaning "no regular file by that name here": missing, symlink (ELOOP), FIFO without writer (ENXIO), directory. */
function notFoundOr(error: unknown, name: string): unknown {
  return isErrno(error, "ENOENT", "ENOTDIR", "ELOOP", "ENXIO", "EISDIR") ? new LogFileNotFoundError(name, { cause: error }) : error;
}

function isErrno(error: unknown, ...codes: string[]): boolean {
  return error instanceof Error && codes.includes((error as NodeJS.ErrnoException).code ?? "");
}

function errorCode(error: unknown): string {
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  return typeof code === "string" ? code : "internal";
}

function sum(values: number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
