import { isAscii } from "node:buffer";
import { BundleError } from "./errors.js";
import { endsPage, type LineMap, type PagedLines } from "./prefix-pages.js";
import { PREFIX_DELTA_FORMAT, PREFIX_SECTION_FORMAT } from "./prefix-section.js";

// A prefix section as columns over its bytes, for a reader that keeps a revision from one delta
// to the next (the agent): where each line starts, how long its prefix is, and a number for its
// family and communities. No string or array a line: 1.2M prefixes are the section's 34 MB and
// 10 bytes a line beside it, and a delta costs a copy of those columns plus what it adds. The
// numbers come from one SectionTags, shared by every revision the reader keeps, so a line keeps
// its number from one revision to the next and "which community sets did this delta touch" is
// a set of numbers.

/** The section's first line, its newline included. */
export const HEAD = Buffer.from(`${PREFIX_SECTION_FORMAT}\n`, "latin1");
const TAB = 0x09;
const NEWLINE = 0x0a;
const COLON = 0x3a;
/** A run of kept lines this long or longer has its columns copied as subarrays, a shorter one walked. */
const LONG_RUN = 256;

/** Each (family, communities as written) seen, numbered in the order first seen. */
export class SectionTags {
  /** Tag → the communities as the section writes them (`65000:1,65000:2`, or empty). */
  readonly texts: string[] = [];
  /** Tag → 1 for an IPv6 prefix. */
  readonly v6: number[] = [];
  readonly #ids = new Map<string, number>();

  /** The tag of `text` in that family, numbered now when it is new. */
  tagOf(v6: boolean, text: string): number {
    const key = `${v6 ? 6 : 4}${text}`;
    let id = this.#ids.get(key);
    if (id === undefined) {
      id = this.texts.length;
      this.texts.push(text);
      this.v6.push(v6 ? 1 : 0);
      this.#ids.set(key, id);
    }
    return id;
  }
}

/** Lines over bytes, as columns: a whole section's, or a chunk's (chunked-section.ts). */
export interface LineColumns {
  /** Where the lines are: line i is `bytes[starts[i], starts[i + 1])`, its newline included (a whole section's bytes begin with its `rl-prefixes/1` line). */
  bytes: Buffer;
  count: number;
  /** Where each line starts, and one more entry: where the last one ends. */
  starts: Uint32Array;
  /** Each line's prefix: `bytes[starts[i], starts[i] + prefixLength[i])` (the tab follows it). */
  prefixLength: Uint8Array;
  /** Each line's tag in the section's SectionTags. */
  tagOf: Uint32Array;
  /** 1 where a page of `rl-prefix-pages/1` ends after the line (prefix-pages.ts): where a page ends is known without hashing the line again. */
  pageEnd: Uint8Array;
}

export interface TaggedSection extends LineColumns {
  tags: SectionTags;
  /** The arrays the columns above are views of, with room to spare (a section a delta made): what a later delta may write into once this section is read no more. */
  store?: SectionStore;
}

/** Room for a section: its bytes and columns are the first parts of these. */
export interface SectionStore {
  bytes: Buffer;
  starts: Uint32Array;
  prefixLength: Uint8Array;
  tagOf: Uint32Array;
  pageEnd: Uint8Array;
}

/** What a delta did to the section it applied to. */
export interface TaggedChange {
  section: TaggedSection;
  /** Tags that lost or gained a line. */
  changedTags: Set<number>;
  /** The added lines, as their index in the new section, ascending. */
  added: Uint32Array;
}

/**
 * The columns of a whole section; throws `malformed` as decodePrefixSection would for what is
 * no section, and for a section that is not ASCII (every section we write is; the generic
 * decoder is the one to read anything else).
 */
export function tagSection(bytes: Buffer, tags: SectionTags): TaggedSection {
  if (bytes.length < HEAD.length || bytes.compare(HEAD, 0, HEAD.length, 0, HEAD.length) !== 0 || bytes[bytes.length - 1] !== NEWLINE) {
    throw new BundleError("malformed", `prefix section is not ${PREFIX_SECTION_FORMAT}`);
  }
  if (!isAscii(bytes)) throw new BundleError("malformed", "prefix section is not ASCII");
  let count = 0;
  for (let at = bytes.indexOf(NEWLINE, HEAD.length); at >= 0; at = bytes.indexOf(NEWLINE, at + 1)) count++;
  const starts = new Uint32Array(count + 1);
  const prefixLength = new Uint8Array(count);
  const tagOf = new Uint32Array(count);
  const pageEnd = new Uint8Array(count);
  const known = new KnownTails(tags);
  let at = HEAD.length;
  for (let i = 0; i < count; i++) {
    const nl = bytes.indexOf(NEWLINE, at);
    const line = readLine(bytes, at, nl, known);
    starts[i] = at;
    prefixLength[i] = line.prefixLength;
    tagOf[i] = line.tag;
    if (endsPage(bytes, at, nl)) pageEnd[i] = 1;
    at = nl + 1;
  }
  starts[count] = at;
  return { bytes, count, starts, prefixLength, tagOf, pageEnd, tags };
}

/**
 * `base` with an `rl-prefix-delta/1` edit script applied: the columns of the kept lines copied
 * as runs, only the added lines read. Throws `digest_mismatch` for a script that does not fit
 * the base (as verifyBundle does) and `malformed` for an added line that is not a prefix line.
 * `check` sees the rebuilt bytes before any added line is read (the caller's SHA-256 against
 * the signed one: nothing unverified is parsed), and with them the new section's line starts
 * and page ends and which lines came from where: enough for updatePages (prefix-pages.ts) to
 * check the signed page root instead, hashing only the pages the delta touched.
 */
export function applyTaggedDelta(
  base: TaggedSection,
  delta: Uint8Array,
  check: (bytes: Buffer, lines: PagedLines, change: LineMap) => void = () => {},
  room: SectionStore | null = null,
): TaggedChange & LineMap {
  const ops = deltaOps(delta);
  const changedTags = new Set<number>();
  let count = 0;
  let size = HEAD.length;
  let cursor = 0;
  for (const op of ops) {
    if (op.line !== null) {
      count++;
      size += op.line.length + 1;
      continue;
    }
    if (cursor + op.n > base.count) {
      throw new BundleError("digest_mismatch", `the delta does not fit the base it names: step ${op.kind}${op.n} on ${base.count} lines`);
    }
    if (op.kind === "=") {
      count += op.n;
      size += (base.starts[cursor + op.n] as number) - (base.starts[cursor] as number);
    } else for (let i = cursor; i < cursor + op.n; i++) changedTags.add(base.tagOf[i] as number);
    cursor += op.n;
  }
  if (cursor !== base.count) throw new BundleError("digest_mismatch", `the delta does not fit the base it names: it covers ${cursor} of ${base.count} lines`);

  // The bytes and where the lines start first; the added lines are read once `check` passed.
  const store = roomIn(room, base, size, count) ?? sectionStore(size, count);
  const bytes = store.bytes.subarray(0, size);
  HEAD.copy(bytes, 0);
  const starts = store.starts.subarray(0, count + 1);
  const prefixLength = store.prefixLength.subarray(0, count);
  const tagOf = store.tagOf.subarray(0, count);
  const pageEnd = store.pageEnd.subarray(0, count);
  const added: number[] = [];
  const kept: number[] = [];
  let at = HEAD.length;
  let j = 0;
  cursor = 0;
  for (const op of ops) {
    if (op.line !== null) {
      starts[j] = at;
      // Hashed, not parsed: where a page ends is needed before the check, and reads nothing into the columns.
      pageEnd[j] = endsPage(op.line, 0, op.line.length) ? 1 : 0;
      at += op.line.copy(bytes, at);
      bytes[at++] = NEWLINE;
      added.push(j++);
      continue;
    }
    if (op.kind === "=") {
      const from = base.starts[cursor] as number;
      const to = base.starts[cursor + op.n] as number;
      base.bytes.copy(bytes, at, from, to);
      // Two keeps in a row (a script may split one) are one run: a page across them is still the base's.
      const last = kept.length - 3;
      if (last >= 0 && (kept[last] as number) + (kept[last + 2] as number) === cursor && (kept[last + 1] as number) + (kept[last + 2] as number) === j) {
        kept[last + 2] = (kept[last + 2] as number) + op.n;
      } else kept.push(cursor, j, op.n);
      const shift = at - from;
      // The columns in one walk of the run; a long run's as copies (a subarray each costs more than a short run's walk).
      if (op.n >= LONG_RUN) {
        prefixLength.set(base.prefixLength.subarray(cursor, cursor + op.n), j);
        tagOf.set(base.tagOf.subarray(cursor, cursor + op.n), j);
        pageEnd.set(base.pageEnd.subarray(cursor, cursor + op.n), j);
        for (let i = cursor; i < cursor + op.n; i++) starts[j++] = (base.starts[i] as number) + shift;
      } else {
        for (let i = cursor; i < cursor + op.n; i++, j++) {
          starts[j] = (base.starts[i] as number) + shift;
          prefixLength[j] = base.prefixLength[i] as number;
          tagOf[j] = base.tagOf[i] as number;
          pageEnd[j] = base.pageEnd[i] as number;
        }
      }
      at = to + shift;
    }
    cursor += op.n;
  }
  starts[count] = at;
  const map: LineMap = { added: Uint32Array.from(added), kept: Uint32Array.from(kept) };
  check(bytes, { bytes, count, starts, pageEnd }, map);
  const known = new KnownTails(base.tags);
  for (const i of added) {
    const line = readLine(bytes, starts[i] as number, (starts[i + 1] as number) - 1, known);
    prefixLength[i] = line.prefixLength;
    tagOf[i] = line.tag;
    changedTags.add(line.tag);
  }
  return { section: { bytes, count, starts, prefixLength, tagOf, pageEnd, tags: base.tags, store }, changedTags, ...map };
}

/**
 * `room` when it holds a section of `size` bytes and `count` lines and is not `base`'s: a delta
 * then writes into memory already mapped. A new 34 MB section a delta (1.2M prefixes) cost as
 * much in page faults as in copying; the caller hands back the store of a section it no longer reads.
 */
function roomIn(store: SectionStore | null, base: TaggedSection, size: number, count: number): SectionStore | null {
  if (!store || store === base.store) return null;
  if (store.bytes.length < size || store.starts.length < count + 1 || store.tagOf.length < count) return null;
  return store;
}

/**
 * Room for a section of `size` bytes and `count` lines, and a sixteenth more: the next revision
 * is seldom much larger. `touch` writes every page of it now (at a quiet moment: after an apply),
 * so the delta that takes it pays no page fault.
 */
export function sectionStore(size: number, count: number, touch = false): SectionStore {
  const lines = count + (count >> 4) + 16;
  const bytes = Buffer.allocUnsafeSlow(size + (size >> 4) + 1024);
  // The typed arrays are zeroed as they are made; the bytes are not.
  if (touch) bytes.fill(0);
  return { bytes, starts: new Uint32Array(lines + 1), prefixLength: new Uint8Array(lines), tagOf: new Uint32Array(lines), pageEnd: new Uint8Array(lines) };
}

/** Line `i`'s prefix, as a string (for the few lines a caller needs as text). */
export function prefixText(section: TaggedSection, i: number): string {
  const start = section.starts[i] as number;
  return section.bytes.toString("latin1", start, start + (section.prefixLength[i] as number));
}

export type DeltaOp = { kind: "="; n: number; line: null } | { kind: "-"; n: number; line: null } | { kind: "+"; n: 1; line: Buffer };

/** An `rl-prefix-delta/1` script's steps; throws `digest_mismatch` for what is no script. */
export function deltaOps(delta: Uint8Array): DeltaOp[] {
  const bytes = Buffer.from(delta.buffer, delta.byteOffset, delta.length);
  const head = `${PREFIX_DELTA_FORMAT}\n`;
  if (bytes.toString("latin1", 0, head.length) !== head || bytes[bytes.length - 1] !== NEWLINE || !isAscii(bytes)) {
    throw new BundleError("digest_mismatch", `the delta does not fit the base it names: it is not ${PREFIX_DELTA_FORMAT}`);
  }
  const ops: DeltaOp[] = [];
  for (let at = head.length; at < bytes.length; ) {
    const nl = bytes.indexOf(NEWLINE, at);
    const kind = bytes[at];
    if (kind === 0x2b) ops.push({ kind: "+", n: 1, line: bytes.subarray(at + 1, nl) });
    else {
      const n = Number(bytes.toString("latin1", at + 1, nl));
      if ((kind !== 0x3d && kind !== 0x2d) || !Number.isSafeInteger(n) || n < 1 || nl - at > 16) {
        throw new BundleError("digest_mismatch", `the delta does not fit the base it names: step ${bytes.toString("latin1", at, Math.min(nl, at + 20))}`);
      }
      ops.push({ kind: kind === 0x3d ? "=" : "-", n, line: null });
    }
    at = nl + 1;
  }
  return ops;
}

/**
 * The communities of the last few distinct lines, by their bytes: a line whose communities are
 * one of those (most are: a revision has a handful of community sets) costs a byte comparison,
 * not a string and a map lookup.
 */
export class KnownTails {
  readonly #tags: SectionTags;
  readonly #recent: { bytes: Buffer; tag4: number; tag6: number }[] = [];

  constructor(tags: SectionTags) {
    this.#tags = tags;
  }

  tagOf(bytes: Buffer, from: number, to: number, v6: boolean): number {
    const length = to - from;
    for (const known of this.#recent) {
      if (known.bytes.length !== length) continue;
      let k = 0;
      while (k < length && known.bytes[k] === bytes[from + k]) k++;
      if (k < length) continue;
      const tag = v6 ? known.tag6 : known.tag4;
      if (tag >= 0) return tag;
      const made = this.#tags.tagOf(v6, bytes.toString("latin1", from, to));
      if (v6) known.tag6 = made;
      else known.tag4 = made;
      return made;
    }
    const tag = this.#tags.tagOf(v6, bytes.toString("latin1", from, to));
    if (this.#recent.length >= 8) this.#recent.pop();
    this.#recent.unshift({ bytes: Buffer.from(bytes.subarray(from, to)), tag4: v6 ? -1 : tag, tag6: v6 ? tag : -1 });
    return tag;
  }
}

/** One line `bytes[at, nl)`: its prefix's length and its tag. */
export function readLine(bytes: Buffer, at: number, nl: number, known: KnownTails): { prefixLength: number; tag: number } {
  let tab = at;
  let v6 = false;
  while (tab < nl && bytes[tab] !== TAB) {
    if (bytes[tab] === COLON) v6 = true;
    tab++;
  }
  // A prefix is at most 43 characters (a full IPv6 address and /128); the column holds up to 255.
  if (tab === at || tab === nl || tab - at > 255) throw new BundleError("malformed", "prefix section line lacks its communities");
  return { prefixLength: tab - at, tag: known.tagOf(bytes, tab + 1, nl, v6) };
}
