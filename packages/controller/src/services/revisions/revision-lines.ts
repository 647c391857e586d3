import { createHash } from "node:crypto";
import { type PrefixTable, writePrefixLines } from "@rlc/shared/prefix";

/*
 * The bytes a revision's digest covers (digestOf in revision-content.ts: a line
 * `prefix communities\n` per announced prefix, IPv4 then IPv6), kept by the tenant's last build
 * so that an incremental rebuild hashes the new content without writing a line of what it
 * kept: the kept ranges' lines are views of the parent's bytes, only the rebuilt blocks' lines
 * are written. SHA-256 of the ~34 MB of a 1.2M-prefix revision takes ~15 ms; writing its lines
 * as strings ~0.3 s; written from the parsed prefixes (writePrefixLines), tens of milliseconds.
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

/** Each tag's line ending: ` communities\n`, the communities joined with commas. */
export const suffixesOf = (tags: readonly { communities: readonly string[] }[]): Buffer[] =>
  tags.map((t) => Buffer.from(` ${t.communities.join(",")}\n`, "utf8"));

/**
 * The lines of prefixes [from, to) of a family, parsed in `table` (whose texts are the
 * canonical ones, as a revision's are), prefix k's tag being tags[k].
 */
export function linesOf(table: PrefixTable, tags: ArrayLike<number>, suffixes: readonly Uint8Array[], from = 0, to = table.count): FamilyLines {
  const { bytes, offsets } = writePrefixLines(table, tags, suffixes, from, to);
  return whole(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), offsets);
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
    // In int32 arithmetic (offsets stay below 2^31): a sum that V8 must treat as a double is
    // several times slower to store in a Uint32Array.
    for (let i = from; i < to; i++) offsets[++k] = (o[i + 1]! + shift) | 0;
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
