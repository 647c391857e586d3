import { hash } from "node:crypto";
import { BundleError } from "./errors.js";
import type { LineMap, TaggedSection } from "./tagged-section.js";

/**
 * `rl-prefix-pages/1`: a prefix section's body (its lines after the first) cut into pages by
 * content, each page hashed, and the digests hashed once more. A delta touches a few pages of a
 * million lines, so a reader that keeps the page digests of its base checks the rebuilt section
 * against the signed root by hashing only the pages the delta touched (~1,100 of ~19,000 for a
 * 1 % change of 1.2M prefixes), not the whole 32 MB again.
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

/** What updatePages reads of a section: its bytes, where its lines start (and end), which lines end a page. */
export type PagedLines = Pick<TaggedSection, "bytes" | "count" | "starts" | "pageEnd">;

const sha256 = (bytes: Uint8Array): Buffer => hash("sha256", bytes, "buffer");

function pagesFrom(ends: number[] | Uint32Array, digests: Buffer): SectionPages {
  return { ends: Uint32Array.from(ends), digests, root: sha256(digests).toString("hex") };
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

/** Where `section`'s pages end, from its `pageEnd` column (a native scan: no line is hashed). */
function pageEndsOf(section: PagedLines): number[] {
  const ends: number[] = [];
  const flags = section.pageEnd.subarray(0, section.count);
  for (let i = flags.indexOf(1); i >= 0; i = flags.indexOf(1, i + 1)) ends.push(i + 1);
  if (section.count > 0 && ends[ends.length - 1] !== section.count) ends.push(section.count);
  return ends;
}

/** The pages of a section already in columns: pagesOf(section.bytes), its cuts read from the `pageEnd` column. */
export function pagesOfLines(section: PagedLines): SectionPages {
  return updatePages(NO_PAGES, section, { added: new Uint32Array(0), kept: new Uint32Array(0) });
}

const NO_PAGES: SectionPages = { ends: new Uint32Array(0), digests: Buffer.alloc(0), root: "" };

/**
 * The pages of `next`, a section a delta made of the one whose pages are `base` (`change` says
 * which lines it kept from where): exactly pagesOf(next.bytes), with each page whose lines are
 * one run of kept lines that was a whole page of the base taken from `base`, and only the others
 * (those holding an added line, or where lines were dropped, or whose cuts moved) hashed. Pages
 * of a base other than the one the delta applied to give another root, never a wrong "same".
 */
export function updatePages(base: SectionPages, next: PagedLines, change: LineMap): SectionPages {
  const ends = pageEndsOf(next);
  const digests = Buffer.allocUnsafe(ends.length * DIGEST_BYTES);
  const runs = change.kept;
  const baseEnds = base.ends;
  let r = 0; // the first run that does not end at or before the page
  let k = 0; // the first base page that does not end at or before the page's image in the base
  let start = 0;
  for (let p = 0; p < ends.length; p++) {
    const end = ends[p] as number;
    while (r < runs.length && (runs[r + 1] as number) + (runs[r + 2] as number) <= start) r += 3;
    let from = -1;
    if (r < runs.length && (runs[r + 1] as number) <= start && end <= (runs[r + 1] as number) + (runs[r + 2] as number)) {
      // All kept, and in one run: the page's lines are base lines [b, b + length), as they were.
      const b = (runs[r] as number) + start - (runs[r + 1] as number);
      while (k < baseEnds.length && (baseEnds[k] as number) <= b) k++;
      if (k < baseEnds.length && (k === 0 ? 0 : (baseEnds[k - 1] as number)) === b && baseEnds[k] === b + end - start) from = k;
    }
    if (from >= 0) base.digests.copy(digests, p * DIGEST_BYTES, from * DIGEST_BYTES, (from + 1) * DIGEST_BYTES);
    else sha256(next.bytes.subarray(next.starts[start], next.starts[end])).copy(digests, p * DIGEST_BYTES);
    start = end;
  }
  return pagesFrom(ends, digests);
}
