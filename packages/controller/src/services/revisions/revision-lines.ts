import { createHash } from "node:crypto";

/*
 * The bytes a revision's digest covers (digestOf in revision-content.ts: a line
 * `prefix communities\n` per announced prefix, IPv4 then IPv6), kept by the tenant's last build
 * so that an incremental rebuild hashes the new content without writing a line of what it
 * kept: the lines of the kept ranges are copied as bytes, only the rebuilt blocks' lines are
 * written. SHA-256 of the ~30 MB of a 1.2M-prefix revision takes ~15 ms; writing its lines as
 * strings ~0.3 s.
 */

/**
 * One family's lines as bytes, in pieces (a rebuilt revision's lines are views of its parent's
 * between the new ones): line i is bytes [offsets[i], offsets[i + 1]) of the pieces one after
 * another; piece k starts at starts[k].
 */
export interface FamilyLines {
  pieces: Buffer[];
  starts: number[];
  offsets: Uint32Array;
}

const whole = (bytes: Buffer, offsets: Uint32Array): FamilyLines => ({ pieces: [bytes], starts: [0], offsets });

/** Past this many pieces a family's bytes are copied into one (each piece is an update of the hash). */
const MAX_PIECES = 8192;

/**
 * The lines of prefixes [from, to) of a family, `joined` being each tag's communities joined
 * with commas (tag k's is joined[tags[k]]).
 */
export function linesOf(prefixes: readonly string[], tags: ArrayLike<number>, joined: readonly string[], from = 0, to = prefixes.length): FamilyLines {
  const offsets = new Uint32Array(to - from + 1);
  const chunks: Buffer[] = [];
  let chunk = "";
  let pos = 0;
  let chunkStart = 0;
  const flush = () => {
    const bytes = Buffer.from(chunk, "utf8");
    if (bytes.length !== chunk.length) throw new NonAscii();
    chunks.push(bytes);
    chunk = "";
    chunkStart = pos;
  };
  try {
    for (let i = from; i < to; i++) {
      chunk += `${prefixes[i]} ${joined[tags[i]!]}\n`;
      pos = chunkStart + chunk.length;
      offsets[i - from + 1] = pos;
      // ~64 kB pieces: one Buffer a line costs several times more.
      if (chunk.length > 65_536) flush();
    }
    flush();
  } catch (e) {
    if (!(e instanceof NonAscii)) throw e;
    return slowLinesOf(prefixes, tags, joined, from, to);
  }
  return whole(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, pos), offsets);
}

class NonAscii extends Error {}

/** linesOf for text that is not all ASCII (a line's bytes are not its characters). */
function slowLinesOf(prefixes: readonly string[], tags: ArrayLike<number>, joined: readonly string[], from: number, to: number): FamilyLines {
  const offsets = new Uint32Array(to - from + 1);
  const chunks: Buffer[] = [];
  let pos = 0;
  for (let i = from; i < to; i++) {
    const line = Buffer.from(`${prefixes[i]} ${joined[tags[i]!]}\n`, "utf8");
    chunks.push(line);
    pos += line.length;
    offsets[i - from + 1] = pos;
  }
  return whole(Buffer.concat(chunks, pos), offsets);
}

/** A piece of one family's new lines: lines [from, to) of `lines`. */
export interface LinesPiece {
  lines: FamilyLines;
  from: number;
  to: number;
}

/** Bytes [from, to) of the lines' pieces, as views. */
function viewsOf(lines: FamilyLines, from: number, to: number, into: Buffer[]) {
  const { pieces, starts } = lines;
  let lo = 0;
  let hi = pieces.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (starts[mid]! <= from) lo = mid;
    else hi = mid - 1;
  }
  for (let k = lo; k < pieces.length && from < to; k++) {
    const end = starts[k]! + pieces[k]!.length;
    if (end <= from) continue;
    const upto = Math.min(to, end);
    into.push(pieces[k]!.subarray(from - starts[k]!, upto - starts[k]!));
    from = upto;
  }
}

/** The lines of the pieces one after another: views of their bytes, offsets shifted. */
export function joinLines(parts: readonly LinesPiece[]): FamilyLines {
  let n = 0;
  for (const p of parts) n += p.to - p.from;
  const offsets = new Uint32Array(n + 1);
  const pieces: Buffer[] = [];
  let k = 0;
  let pos = 0;
  for (const { lines, from, to } of parts) {
    const o = lines.offsets;
    const base = o[from]!;
    viewsOf(lines, base, o[to]!, pieces);
    const shift = pos - base;
    for (let i = from; i < to; i++) offsets[++k] = o[i + 1]! + shift;
    pos += o[to]! - base;
  }
  if (pieces.length > MAX_PIECES) return whole(Buffer.concat(pieces, pos), offsets);
  const starts = new Array<number>(pieces.length);
  let at = 0;
  pieces.forEach((p, i) => {
    starts[i] = at;
    at += p.length;
  });
  return { pieces, starts, offsets };
}

/** The revision digest of both families' lines: digestOf's value. */
export function digestOfLines(v4: FamilyLines, v6: FamilyLines): string {
  const h = createHash("sha256");
  for (const p of v4.pieces) h.update(p);
  for (const p of v6.pieces) h.update(p);
  return `sha256:${h.digest("hex")}`;
}
