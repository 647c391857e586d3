import { hash } from "node:crypto";
import { BundleError } from "./errors.js";

/**
 * `rl-prefix-pages/1`: a prefix section's body (its lines after the first) cut into pages by
 * content, each page hashed, and the digests hashed once more. A delta touches a few pages of a
 * million lines, so a reader that keeps the page digests of its base checks the rebuilt section
 * against the signed root by hashing only the pages the delta touched (1,193 of 18,773, 3.3 MB,
 * for 1,100 scattered edits of 1.2M prefixes: bench/prefix-pages.mjs), not the whole 33 MB again.
 *
 * - A page ends after a line whose FNV-1a 32-bit hash (of its bytes without the newline) has its
 *   low 6 bits zero, and the last page at the section's end: about 64 lines a page. The cut
 *   depends only on the line itself, so an edit moves only the cuts of the lines it adds or drops.
 * - A page's digest is the SHA-256 of its bytes, newlines included; the root is the hex SHA-256
 *   of the digests concatenated (32 bytes each, in order). An empty body has no page, and its
 *   root is the SHA-256 of nothing. The first line (`rl-prefixes/1`) is in no page: it is fixed.
 */
export const PREFIX_PAGES_FORMAT = "rl-prefix-pages/1";

const NEWLINE = 0x0a;
/** FNV-1a's 32-bit offset basis, as a signed int32: V8 keeps the loop's hash a small integer. */
const FNV_OFFSET = 0x811c9dc5 | 0;
const FNV_PRIME = 0x01000193;
const PAGE_MASK = 63;
const DIGEST_BYTES = 32;

/** Whether the line `bytes[from, to)` (its newline not included) ends a page. */
export function endsPage(bytes: Uint8Array, from: number, to: number): boolean {
  let h = FNV_OFFSET;
  for (let i = from; i < to; i++) h = Math.imul(h ^ (bytes[i] as number), FNV_PRIME);
  return (h & PAGE_MASK) === 0;
}

/** A section's pages: what a reader keeps beside the section to check the next delta. */
export interface SectionPages {
  /** Page k holds the body lines from `ends[k - 1]` (0 for the first page) to before `ends[k]`; the last entry is the number of lines. */
  ends: Uint32Array;
  /** The pages' SHA-256 digests, 32 bytes each, in order. */
  digests: Buffer;
  /** Hex SHA-256 of `digests`: the header's `prefixes_pages_sha256`. */
  root: string;
}

/** What updatePages reads of a section (a TaggedSection's columns): its bytes, where its lines start (and end), which lines end a page. */
export interface PagedLines {
  bytes: Buffer;
  count: number;
  starts: Uint32Array;
  pageEnd: Uint8Array;
}

/** Where a delta's section took its lines from: what updatePages needs to take the base's pages over. */
export interface LineMap {
  /** The added lines, as their index in the new section, ascending. */
  added: Uint32Array;
  /**
   * The runs of base lines kept, as triples `(baseFrom, newFrom, n)`: base lines
   * `[baseFrom, baseFrom + n)` are the new section's `[newFrom, newFrom + n)`. Ascending in both;
   * between two runs, base lines were dropped or new ones added (or both).
   */
  kept: Uint32Array;
}

const sha256 = (bytes: Uint8Array): Buffer => hash("sha256", bytes, "buffer");

function pagesFrom(ends: number[] | Uint32Array, digests: Buffer): SectionPages {
  return { ends: ends instanceof Uint32Array ? ends : Uint32Array.from(ends), digests, root: sha256(digests).toString("hex") };
}

/** The pages of a section's bytes (its first line, then lines each ending with a newline); throws `malformed` for what is no section. */
export function pagesOf(section: Uint8Array): SectionPages {
  const bytes = new Uint8Array(section.buffer, section.byteOffset, section.length);
  const body = bytes.indexOf(NEWLINE) + 1;
  if (body === 0 || bytes[bytes.length - 1] !== NEWLINE) throw new BundleError("malformed", "prefix section does not end its lines with a newline");
  const ends: number[] = [];
  const digests: Buffer[] = [];
  let lines = 0;
  let pageStart = body;
  let h = FNV_OFFSET;
  for (let i = body; i < bytes.length; i++) {
    const c = bytes[i] as number;
    if (c !== NEWLINE) {
      h = Math.imul(h ^ c, FNV_PRIME);
      continue;
    }
    lines++;
    if ((h & PAGE_MASK) === 0) {
      ends.push(lines);
      digests.push(sha256(bytes.subarray(pageStart, i + 1)));
      pageStart = i + 1;
    }
    h = FNV_OFFSET;
  }
  if (pageStart < bytes.length) {
    ends.push(lines);
    digests.push(sha256(bytes.subarray(pageStart)));
  }
  return pagesFrom(ends, Buffer.concat(digests));
}

/** The pages of a section already in columns: pagesOf(section.bytes), its cuts read from the `pageEnd` column (no line hashed again). */
export function pagesOfLines(section: PagedLines): SectionPages {
  const flags = section.pageEnd.subarray(0, section.count);
  const ends: number[] = [];
  const digests: Buffer[] = [];
  const page = (from: number, to: number) => {
    ends.push(to);
    digests.push(sha256(section.bytes.subarray(section.starts[from], section.starts[to])));
  };
  let start = 0;
  for (let i = flags.indexOf(1); i >= 0; i = flags.indexOf(1, i + 1)) {
    page(start, i + 1);
    start = i + 1;
  }
  if (start < section.count) page(start, section.count);
  return pagesFrom(ends, Buffer.concat(digests));
}

/**
 * The pages of `next`, a section a delta made of the one whose pages are `base` (`change` says
 * which lines it kept from where and which it added): exactly pagesOf(next.bytes). A page that
 * is one run of kept lines and was a whole page of the base takes the base's digest; only the
 * others (holding an added line or a dropped line's place, or cut elsewhere) are hashed. The
 * cuts come from the base's, moved with their runs, and from the `pageEnd` of added lines: no
 * kept line's bytes are read. `base` must be the pages of the section the delta applied to (the reader
 * keeps them beside it): its digests are taken as they are.
 */
export function updatePages(base: SectionPages, next: PagedLines, change: LineMap): SectionPages {
  const { kept: runs, added } = change;
  const { pageEnd } = next;
  const baseEnds = base.ends;
  // Every cut is a base cut moved, an added line's, or the section's end.
  const ends = new Uint32Array(baseEnds.length + added.length + 1);
  const digests = Buffer.allocUnsafe(ends.length * DIGEST_BYTES);
  let pages = 0;
  let start = 0; // the first line of the page being cut
  // Base digests to take, as one copy while they come in a row.
  let copyFrom = 0;
  let copyTo = 0;
  let copying = 0;
  const flush = () => {
    if (copying) digests.set(base.digests.subarray(copyFrom * DIGEST_BYTES, (copyFrom + copying) * DIGEST_BYTES), copyTo * DIGEST_BYTES);
    copying = 0;
  };
  /** Ends the page at `end`: base page `from`'s digest, or (-1) its bytes hashed. */
  const cut = (end: number, from: number) => {
    if (from < 0) digests.set(sha256(next.bytes.subarray(next.starts[start], next.starts[end])), pages * DIGEST_BYTES);
    else if (copying && copyFrom + copying === from && copyTo + copying === pages) copying++;
    else {
      flush();
      copyFrom = from;
      copyTo = pages;
      copying = 1;
    }
    ends[pages++] = end;
    start = end;
  };
  let a = 0;
  const cutAdded = (before: number) => {
    for (; a < added.length && (added[a] as number) < before; a++) if (pageEnd[added[a] as number] === 1) cut((added[a] as number) + 1, -1);
  };
  let k = 0;
  for (let r = 0; r < runs.length; r += 3) {
    const baseFrom = runs[r] as number;
    const newFrom = runs[r + 1] as number;
    const n = runs[r + 2] as number;
    cutAdded(newFrom);
    while (k < baseEnds.length && (baseEnds[k] as number) <= baseFrom) k++;
    for (; k < baseEnds.length && (baseEnds[k] as number) <= baseFrom + n; k++) {
      const end = newFrom + (baseEnds[k] as number) - baseFrom;
      // The base's last page, ended by the base's end rather than by its line: here more may follow.
      if (pageEnd[end - 1] !== 1) continue;
      const b = k === 0 ? 0 : (baseEnds[k - 1] as number);
      cut(end, b >= baseFrom && start === newFrom + b - baseFrom ? k : -1);
    }
  }
  cutAdded(next.count);
  if (start < next.count) {
    // The last page, ended by the section's end: the base's last page when one run ends both.
    let from = -1;
    const r = runs.length - 3;
    const last = baseEnds.length - 1;
    if (r >= 0 && last >= 0) {
      const baseFrom = runs[r] as number;
      const newFrom = runs[r + 1] as number;
      const n = runs[r + 2] as number;
      const b = last === 0 ? 0 : (baseEnds[last - 1] as number);
      if (newFrom + n === next.count && baseFrom + n === baseEnds[last] && b >= baseFrom && start === newFrom + b - baseFrom) from = last;
    }
    cut(next.count, from);
  }
  flush();
  return pagesFrom(ends.subarray(0, pages), digests.subarray(0, pages * DIGEST_BYTES));
}
