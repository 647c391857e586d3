import { createHash } from "node:crypto";
import { type BigIntStats, closeSync, constants, fstatSync, lstatSync, openSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { type FileText, textData } from "./atomic-file.js";
import { CheckCopy } from "./check-copy.js";

// What this process last wrote (or read) in BIRD's config directory, so that the validate step
// need not read again a file nobody has touched since: one file of a split render a community
// set that did not change, most of the config on a 1 % change.

/** A file's text: a string (written as UTF-8) or its bytes. */

/** A file as this process last wrote or read it. */
export interface KnownFile {
  /** The very text object written (or the rendered one the file was found to hold). */
  readonly text: FileText;
  /**
   * What `bird -p` reads of this file while it runs unchanged (change.ts makes it once a text):
   * every route line blank; null when that cannot be made (the text is not ASCII).
   */
  unchangedCheck?: string | null;
}

/** What tells one version of a file from another without reading it. */
interface Stamp {
  dev: bigint;
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/** A file's entry taken out while the stage step replaces it: put back when undo brings the old file back. */
export interface SetAside {
  known: KnownFile;
  stamp: Stamp;
}

/**
 * The files this process last wrote or read in one config directory: name → the text object and
 * the file's lstat right after (device, inode, size, modification and change times in ns). A
 * file whose lstat still matches holds those bytes: whoever writes it, a hand edit included,
 * changes its change time (or its inode, when an editor renames a copy in). The caller owns one
 * per directory and passes it to each step that reads or writes there.
 *
 * Not covered: a write within the same clock tick as ours that keeps the size, on a kernel
 * without fine-grained file times (before Linux 6.13); the file is read again only once its
 * stat changes.
 */
export class WrittenFiles {
  readonly dir: string;
  /** The copy `bird -p` reads of this directory's config, kept between applies (check-copy.ts). */
  readonly checkCopy: CheckCopy;
  readonly #files = new Map<string, SetAside>();

  constructor(dir: string) {
    this.dir = resolve(dir);
    this.checkCopy = new CheckCopy(`check-${createHash("sha256").update(this.dir).digest("hex").slice(0, 16)}`);
  }

  /** Throws when `dir` is not this memo's directory: another directory's names would match by accident. */
  assertDir(dir: string): void {
    if (resolve(dir) !== this.dir) throw new TypeError(`these written files are of ${this.dir}, not ${resolve(dir)}`);
  }

  /**
   * The file `name` as this process last wrote or read it, when it is still that file (a regular
   * file, same inode, size and times); null otherwise, and the entry is dropped.
   */
  known(name: string): KnownFile | null {
    const entry = this.#files.get(name);
    if (!entry) return null;
    const now = this.#lstat(name);
    if (now?.isFile() && sameStamp(entry.stamp, now)) return entry.known;
    this.#files.delete(name);
    return null;
  }

  /** `name` holds `text`, as `stat` (an fstat of the descriptor it was read through, or an lstat) found it. */
  record(name: string, text: FileText, stat: BigIntStats): KnownFile {
    const known = { text };
    this.#files.set(name, { known, stamp: stampOf(stat) });
    return known;
  }

  /**
   * `name` was just written with `text` under a temporary name whose descriptor `stat` describes,
   * then renamed: recorded when the name still holds that inode (else forgotten).
   */
  recordWrite(name: string, text: FileText, stat: BigIntStats): KnownFile | null {
    const now = this.#lstat(name);
    if (now?.isFile() && now.ino === stat.ino && now.dev === stat.dev && now.size === stat.size) return this.record(name, text, now);
    this.#files.delete(name);
    return null;
  }

  /** The known file holds `text` too (the same bytes in another object): later renders that hand back `text` are told by identity. */
  adopt(name: string, text: FileText): KnownFile | null {
    const entry = this.#files.get(name);
    if (!entry) return null;
    entry.known = { text };
    return entry.known;
  }

  /** Takes the entry of a file about to be replaced (see {@link putBack}). */
  take(name: string): SetAside | undefined {
    const entry = this.#files.get(name);
    this.#files.delete(name);
    return entry;
  }

  /**
   * The file taken with {@link take} is back under its name (renamed or linked back: its change
   * time moved, nothing else): known again when inode, size and modification time are its own.
   */
  putBack(name: string, aside: SetAside): void {
    const now = this.#lstat(name);
    const was = aside.stamp;
    if (now?.isFile() && now.dev === was.dev && now.ino === was.ino && now.size === was.size && now.mtimeNs === was.mtimeNs) {
      this.#files.set(name, { known: aside.known, stamp: stampOf(now) });
    } else this.#files.delete(name);
  }

  /**
   * The bytes of `name` when this process wrote (or read) it with `text` (that very object) and
   * nobody has touched it since: its stat through the descriptor, before the read and after it,
   * is the one recorded. Null otherwise; the entry stays for the validate step to judge. For a
   * renderer that makes a file's next version from this one's bytes rather than holding them
   * (the page cache has them: the file was written by the last apply).
   */
  readBack(name: string, text: FileText): Buffer | null {
    const entry = this.#files.get(name);
    if (entry?.known.text !== text) return null;
    let fd: number | null = null;
    try {
      fd = openSync(join(this.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW);
      if (!sameStamp(entry.stamp, fstatSync(fd, { bigint: true }))) return null;
      const bytes = readFileSync(fd);
      return sameStamp(entry.stamp, fstatSync(fd, { bigint: true })) && BigInt(bytes.length) === entry.stamp.size ? bytes : null;
    } catch {
      return null;
    } finally {
      if (fd !== null) closeSync(fd);
    }
  }

  forget(name: string): void {
    this.#files.delete(name);
  }

  #lstat(name: string): BigIntStats | null {
    try {
      return lstatSync(join(this.dir, name), { bigint: true });
    } catch {
      return null;
    }
  }
}

function stampOf(s: BigIntStats): Stamp {
  return { dev: s.dev, ino: s.ino, size: s.size, mtimeNs: s.mtimeNs, ctimeNs: s.ctimeNs };
}

function sameStamp(a: Stamp, s: BigIntStats): boolean {
  return a.dev === s.dev && a.ino === s.ino && a.size === s.size && a.mtimeNs === s.mtimeNs && a.ctimeNs === s.ctimeNs;
}

/** Whether two texts are the same bytes (a string stands for its UTF-8); false when one is a MadeText that can no longer be made. */
export function sameBytes(a: FileText, b: FileText): boolean {
  if (a === b) return true;
  const p = textData(a);
  const q = textData(b);
  if (p === null || q === null) return false;
  if (typeof p === "string" && typeof q === "string") return p === q;
  const x = typeof p === "string" ? Buffer.from(p, "utf8") : p;
  const y = typeof q === "string" ? Buffer.from(q, "utf8") : q;
  return x.equals(y);
}
