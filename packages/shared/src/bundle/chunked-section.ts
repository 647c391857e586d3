import { createHash, hash } from "node:crypto";
import { BundleError } from "./errors.js";
import { endsPage, type SectionPages } from "./prefix-pages.js";
import { type DeltaOp, deltaOps, HEAD, KnownTails, type LineColumns, readLine, type SectionTags, type TaggedSection } from "./tagged-section.js";

// A prefix section held as chunks that revisions share, for a reader that keeps it from one
// delta to the next (the agent). A delta of a few hundred scattered edits to 1.2M prefixes
// rebuilds the ~1,000 chunks it touches (a few MB) and takes the other chunks of its base as
// they are: no copy of the whole 34 MB section and its columns a delta, no hash of it. Each
// chunk ends where an `rl-prefix-pages/1` page ends (the last one at the section's end) and
// carries its pages' digests, so the signed page root is checked from the digests of every
// chunk, only the rebuilt chunks' pages hashed.

/**
 * At least this many lines a chunk (it ends at the next page end: ~155 lines on average at 1.2M,
 * ~7,700 chunks): a rebuilt chunk is copied whole, its lines read again by the render, and each
 * chunk is an object the agent holds. 128 rebuilt ~5.2 MB for a 1 % delta at 1.2M; 32, ~3.3 MB.
 */
export const CHUNK_LINES = 32;
const DIGEST = 32;
const NEWLINE = 0x0a;

/** Lines of a section, as the tagged section's columns, over bytes the chunk may share with others. */
export interface SectionChunk extends LineColumns {
  /** The SHA-256 digests of the pages that end in this chunk, 32 bytes each, in order. */
  digests: Buffer;
}

export interface ChunkedSection {
  chunks: readonly SectionChunk[];
  /** Chunk k's first line, and one more entry: the section's line count. */
  first: Uint32Array;
  count: number;
  /** The section's bytes, its `rl-prefixes/1` line included. */
  size: number;
  tags: SectionTags;
  /** Hex SHA-256 of every page's digest in order: the section's `rl-prefix-pages/1` root. */
  root: string;
  /** Bytes of the chunks deltas rebuilt since the section was read whole or compactSection last looked at it. */
  rebuilt: number;
}

/** What a delta did to the chunked section it applied to. */
export interface ChunkedChange {
  section: ChunkedSection;
  /** Tags that lost or gained a line. */
  changedTags: Set<number>;
  /** The added lines, as their index in the new section, ascending. */
  added: Uint32Array;
  /** Each rebuilt chunk's runs of kept lines, in order: what a reader of the base's lines (a route file written from them) may take over. */
  kept: Map<SectionChunk, readonly KeptRun[]>;
}

/** Base chunk `chunk`'s lines `[from, from + n)`, kept as lines `[at, at + n)` of a rebuilt chunk. */
export interface KeptRun {
  at: number;
  chunk: SectionChunk;
  from: number;
  n: number;
}

/** What a delta's signed header says the rebuilt section is. */
export interface ChunkedTarget {
  /** `prefixes_sha256`: checked by hashing the whole section only when no page root is signed. */
  sha256: string;
  /** `prefixes_pages_sha256`, from a controller that signs it. */
  pagesRoot?: string | undefined;
}

/** A tagged section and its pages (prefix-pages.ts) as chunks: views of its bytes and columns, nothing copied. */
export function chunkSection(section: TaggedSection, pages: SectionPages, lines = CHUNK_LINES): ChunkedSection {
  const chunks: SectionChunk[] = [];
  let from = 0;
  let fromPage = 0;
  const { ends } = pages;
  for (let p = 0; p < ends.length; p++) {
    const end = ends[p] as number;
    if (end - from < lines && p < ends.length - 1) continue;
    chunks.push({
      bytes: section.bytes,
      count: end - from,
      starts: section.starts.subarray(from, end + 1),
      prefixLength: section.prefixLength.subarray(from, end),
      tagOf: section.tagOf.subarray(from, end),
      pageEnd: section.pageEnd.subarray(from, end),
      digests: pages.digests.subarray(fromPage * DIGEST, (p + 1) * DIGEST),
    });
    from = end;
    fromPage = p + 1;
  }
  return { chunks, first: firstLines(chunks), count: section.count, size: section.bytes.length, tags: section.tags, root: pages.root, rebuilt: 0 };
}

/** The section's bytes whole (a copy): for what needs them as one buffer (the state's base file, a payload decoded). */
export function chunkedBytes(section: ChunkedSection): Buffer {
  const out = Buffer.allocUnsafe(section.size);
  let at = HEAD.copy(out, 0);
  for (const c of section.chunks) at += c.bytes.copy(out, at, c.starts[0] as number, c.starts[c.count] as number);
  return out;
}

/** Hex SHA-256 of the section's bytes, chunk by chunk. */
export function chunkedSha256(section: ChunkedSection): string {
  const h = createHash("sha256").update(HEAD);
  for (const c of section.chunks) h.update(c.bytes.subarray(c.starts[0] as number, c.starts[c.count] as number));
  return h.digest("hex");
}

/** A run of lines the new section takes: a base chunk's lines `[from, to)`, or one added line. */
type Piece = { chunk: SectionChunk; from: number; to: number; line: null } | { chunk: null; from: 0; to: 0; line: Buffer; pageEnd: boolean };

/** A chunk of the new section: one of the base taken as it is, or pieces to copy. */
type Planned = { reused: SectionChunk } | { reused: null; pieces: Piece[]; count: number; size: number; pages: number };

/**
 * `base` with an `rl-prefix-delta/1` edit script applied: the chunks the script does not touch
 * taken as they are, the others rebuilt, and the rebuilt section checked against `target`
 * before any added line is read (nothing unverified is parsed): by the signed page root when
 * there is one (only the rebuilt chunks' pages hashed), else by the SHA-256 of the whole.
 * Throws `digest_mismatch` for a script that does not fit the base or rebuilds other bytes, and
 * `malformed` for an added line that is not a prefix line (as applyTaggedDelta does).
 */
export function applyChunkedDelta(base: ChunkedSection, delta: Uint8Array, target: ChunkedTarget, lines = CHUNK_LINES): ChunkedChange {
  const ops = deltaOps(delta);
  const { chunks, first } = base;
  const changedTags = new Set<number>();

  // Which base chunks the script touches: a dropped line's, or the one an added line goes before (the last for one added at the end).
  const touched = new Uint8Array(chunks.length);
  let cursor = 0;
  let k = 0;
  let size = HEAD.length;
  const chunkOf = (line: number) => {
    while (k < chunks.length - 1 && (first[k + 1] as number) <= line) k++;
    return k;
  };
  // Indexed loops over what has an entry a line or a chunk: an iterator's result a step is garbage while the JIT is cold (once a delta).
  for (let q = 0; q < ops.length; q++) {
    const op = ops[q] as DeltaOp;
    if (op.line !== null) {
      if (chunks.length > 0) touched[chunkOf(Math.min(cursor, base.count - 1))] = 1;
      size += op.line.length + 1;
      continue;
    }
    if (cursor + op.n > base.count) {
      throw new BundleError("digest_mismatch", `the delta does not fit the base it names: step ${op.kind}${op.n} on ${base.count} lines`);
    }
    if (op.kind === "-") {
      for (let line = cursor; line < cursor + op.n; ) {
        const c = chunks[chunkOf(line)] as SectionChunk;
        touched[k] = 1;
        const end = Math.min(cursor + op.n, first[k + 1] as number);
        for (let j = line - (first[k] as number); j < end - (first[k] as number); j++) changedTags.add(c.tagOf[j] as number);
        size -= (c.starts[end - (first[k] as number)] as number) - (c.starts[line - (first[k] as number)] as number);
        line = end;
      }
    }
    cursor += op.n;
  }
  if (cursor !== base.count) throw new BundleError("digest_mismatch", `the delta does not fit the base it names: it covers ${cursor} of ${base.count} lines`);
  size += base.size - HEAD.length;

  // The plan: base chunks untouched taken as they are, the rest as pieces cut into new chunks at page ends.
  const plan: Planned[] = [];
  let pieces: Piece[] = [];
  let count = 0;
  let bytes = 0;
  let pages = 0;
  let endsPageNow = false;
  const emit = (last: boolean) => {
    if (count === 0) return;
    plan.push({ reused: null, pieces, count, size: bytes, pages: pages + (last && !endsPageNow ? 1 : 0) });
    pieces = [];
    count = bytes = pages = 0;
  };
  const keep = (c: SectionChunk, from: number, to: number) => {
    // A long run is cut at a page end once the chunk being made holds enough lines.
    while (from < to) {
      let end = to;
      if (count + (to - from) > 2 * lines) {
        const cut = c.pageEnd.indexOf(1, Math.max(from, from + lines - count - 1));
        if (cut >= 0 && cut < to - 1) end = cut + 1;
      }
      pieces.push({ chunk: c, from, to: end, line: null });
      // Its page ends counted by the flags' indexOf, not line by line.
      for (let j = c.pageEnd.indexOf(1, from); j >= 0 && j < end; j = c.pageEnd.indexOf(1, j + 1)) pages++;
      count += end - from;
      bytes += (c.starts[end] as number) - (c.starts[from] as number);
      endsPageNow = c.pageEnd[end - 1] === 1;
      from = end;
      if (from < to) emit(false);
    }
  };
  const add = (line: Buffer) => {
    const pageEnd = endsPage(line, 0, line.length);
    pieces.push({ chunk: null, from: 0, to: 0, line, pageEnd });
    count++;
    bytes += line.length + 1;
    endsPageNow = pageEnd;
    if (pageEnd) {
      pages++;
      if (count >= 2 * lines) emit(false);
    }
  };
  let o = 0;
  let left = ops[0]?.n ?? 0;
  const next = () => {
    o++;
    left = ops[o]?.n ?? 0;
  };
  /** Steps the script over chunk `c`'s lines, each line's added ones first; `made` keeps its kept lines (an untouched chunk taken as it is does not). */
  const walk = (c: SectionChunk, made: boolean) => {
    for (let j = 0; j < c.count; ) {
      const op = ops[o] as DeltaOp;
      if (op.line !== null) {
        add(op.line);
        next();
        continue;
      }
      const step = Math.min(left, c.count - j);
      if (op.kind === "=" && made) keep(c, j, j + step);
      j += step;
      left -= step;
      if (left === 0) next();
    }
  };
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i] as SectionChunk;
    const made = touched[i] === 1 || count > 0;
    if (!made) plan.push({ reused: c });
    walk(c, made);
    // A chunk ends at a page end with enough lines; else the next chunk joins it.
    if (made && endsPageNow && count >= lines >> 1) emit(false);
  }
  // What is left of the script adds lines at the section's end (the fit check above saw to that).
  for (; o < ops.length; o++) add((ops[o] as DeltaOp & { kind: "+" }).line);
  emit(true);

  // The new chunks' bytes and columns, in one buffer and one array each.
  let newLines = 0;
  let newBytes = 0;
  let newPages = 0;
  for (let q = 0; q < plan.length; q++) {
    const p = plan[q] as Planned;
    if (p.reused) continue;
    newLines += p.count;
    newBytes += p.size;
    newPages += p.pages;
  }
  const arena = {
    bytes: Buffer.allocUnsafeSlow(newBytes),
    starts: new Uint32Array(newLines + plan.length),
    prefixLength: new Uint8Array(newLines),
    tagOf: new Uint32Array(newLines),
    pageEnd: new Uint8Array(newLines),
    digests: Buffer.allocUnsafeSlow(newPages * DIGEST),
  };
  const made: SectionChunk[] = [];
  const addedOf = new Map<SectionChunk, number[]>();
  const keptOf = new Map<SectionChunk, readonly KeptRun[]>();
  let at = 0;
  let line = 0;
  let startAt = 0;
  let digestAt = 0;
  for (let q = 0; q < plan.length; q++) {
    const p = plan[q] as Planned;
    if (p.reused) {
      made.push(p.reused);
      continue;
    }
    const starts = arena.starts.subarray(startAt, startAt + p.count + 1);
    const prefixLength = arena.prefixLength.subarray(line, line + p.count);
    const tagOf = arena.tagOf.subarray(line, line + p.count);
    const pageEnd = arena.pageEnd.subarray(line, line + p.count);
    const added: number[] = [];
    /** The kept runs as they landed: base chunk `chunk`'s lines from `from` are this chunk's lines from `at`, `n` of them. */
    const runs: KeptRun[] = [];
    let j = 0;
    for (let q = 0; q < p.pieces.length; q++) {
      const piece = p.pieces[q] as Piece;
      if (piece.line !== null) {
        starts[j] = at;
        at += piece.line.copy(arena.bytes, at);
        arena.bytes[at++] = NEWLINE;
        pageEnd[j] = piece.pageEnd ? 1 : 0;
        added.push(j++);
        continue;
      }
      const { chunk: c, from, to } = piece;
      runs.push({ at: j, chunk: c, from, n: to - from });
      const shift = at - (c.starts[from] as number);
      at += c.bytes.copy(arena.bytes, at, c.starts[from] as number, c.starts[to] as number);
      prefixLength.set(c.prefixLength.subarray(from, to), j);
      tagOf.set(c.tagOf.subarray(from, to), j);
      pageEnd.set(c.pageEnd.subarray(from, to), j);
      for (let i = from; i < to; i++) starts[j++] = (c.starts[i] as number) + shift;
    }
    starts[j] = at;
    // Each page's digest: a page that is one of a base chunk's pages as it was (inside one kept
    // run, starting where that page started, ending where it ended: the flag goes with the line)
    // takes that page's digest; only the others are hashed.
    const digests = arena.digests.subarray(digestAt, digestAt + p.pages * DIGEST);
    let page = 0;
    let pageStart = 0;
    let r = 0;
    // Pages of run r's chunk before its line `flagLine`: the digest index of the page starting there.
    let flagLine = 0;
    let flags = 0;
    // From one page's last line to the next (the flags' indexOf), the chunk's last line ending the last page.
    for (let i = pageEnd.indexOf(1); pageStart < p.count; i = pageEnd.indexOf(1, i + 1)) {
      if (i < 0) i = p.count - 1;
      while (r < runs.length && (runs[r] as KeptRun).at + (runs[r] as KeptRun).n <= pageStart) {
        r++;
        flagLine = flags = 0;
      }
      const run = runs[r];
      let taken = false;
      if (run && run.at <= pageStart && i < run.at + run.n && pageEnd[i] === 1) {
        const b = run.from + pageStart - run.at;
        const c = run.chunk;
        if (b === 0 || c.pageEnd[b - 1] === 1) {
          for (let x = c.pageEnd.indexOf(1, flagLine); x >= 0 && x < b; x = c.pageEnd.indexOf(1, x + 1)) flags++;
          flagLine = Math.max(flagLine, b);
          digests.set(c.digests.subarray(flags * DIGEST, (flags + 1) * DIGEST), page * DIGEST);
          taken = true;
        }
      }
      if (!taken) digests.set(hash("sha256", arena.bytes.subarray(starts[pageStart] as number, starts[i + 1] as number), "buffer"), page * DIGEST);
      page++;
      pageStart = i + 1;
    }
    const chunk: SectionChunk = { bytes: arena.bytes, count: p.count, starts, prefixLength, tagOf, pageEnd, digests };
    made.push(chunk);
    if (added.length > 0) addedOf.set(chunk, added);
    keptOf.set(chunk, runs);
    line += p.count;
    startAt += p.count + 1;
    digestAt += p.pages * DIGEST;
  }

  // Checked before any added line is read.
  const root = createHash("sha256");
  for (let i = 0; i < made.length; i++) root.update((made[i] as SectionChunk).digests);
  const section: ChunkedSection = {
    chunks: made,
    first: firstLines(made),
    count: 0,
    size,
    tags: base.tags,
    root: root.digest("hex"),
    rebuilt: base.rebuilt + newBytes,
  };
  section.count = section.first[made.length] as number;
  const fits = target.pagesRoot !== undefined ? section.root === target.pagesRoot : chunkedSha256(section) === target.sha256;
  if (!fits) throw new BundleError("digest_mismatch", "the prefixes rebuilt from the delta are not the revision's");

  const known = new KnownTails(base.tags);
  const added: number[] = [];
  made.forEach((c, i) => {
    const mine = addedOf.get(c);
    if (!mine) return;
    for (const j of mine) {
      const read = readLine(c.bytes, c.starts[j] as number, (c.starts[j + 1] as number) - 1, known);
      c.prefixLength[j] = read.prefixLength;
      c.tagOf[j] = read.tag;
      changedTags.add(read.tag);
      added.push((section.first[i] as number) + j);
    }
  });
  return { section, changedTags, added: Uint32Array.from(added), kept: keptOf };
}

function firstLines(chunks: readonly SectionChunk[]): Uint32Array {
  const first = new Uint32Array(chunks.length + 1);
  for (let i = 0; i < chunks.length; i++) first[i + 1] = (first[i] as number) + (chunks[i] as SectionChunk).count;
  return first;
}
