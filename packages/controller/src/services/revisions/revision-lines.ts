import { createHash } from "node:crypto";
import { type PrefixTable, writePrefixLines } from "@rlc/shared/prefix";

/*
 * The bytes a revision's digest covers (revision-digest.ts: a line `prefix communities\n` per
 * announced prefix, IPv4 then IPv6), kept by the tenant's last build so that an incremental
 * rebuild hashes the groups it touched without writing a line of what it kept: the kept
 * ranges' lines are views of the parent's bytes, only the rebuilt blocks' lines are written.
 * Writing a 1.2M-prefix revision's lines as strings takes ~0.3 s; from the parsed prefixes
 * (writePrefixLines), tens of milliseconds.
 */

/**
 * One family's lines as bytes, in runs (a rebuilt revision's lines are runs of its parent's
 * between the new ones): run k is lines [from, to) of a written block of lines (`bytes`, line j
 * being bytes [offsets[j], offsets[j + 1])), and lines [first, first + to - from) of the family.
 * A join makes new runs, not new offsets: the offsets of a written block are shared by every
 * revision whose lines take some of it (a rebuild used to shift the offsets of all 1.2M lines
 * of a large tenant, a cold loop of 20-45 ms in the controller).
 */
export interface FamilyLines {
  runs: LinesRun[];
  /** How many lines. */
  count: number;
}

export interface LinesRun {
  bytes: Buffer;
  offsets: Uint32Array;
  from: number;
  to: number;
  /** The family's line this run starts at. */
  first: number;
}

const whole = (bytes: Buffer, offsets: Uint32Array): FamilyLines => ({
  runs: [{ bytes, offsets, from: 0, to: offsets.length - 1, first: 0 }],
  count: offsets.length - 1,
});

/** Past this many runs a family's bytes are copied into one (each run is an update of the hash). */
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

/** The bytes of each run, as views: what the digest hashes. */
export function piecesOf(lines: FamilyLines): Buffer[] {
  return lines.runs.map((r) => r.bytes.subarray(r.offsets[r.from]!, r.offsets[r.to]!));
}

/** Where each line starts in the family's bytes, and where the last ends (count + 1 offsets). */
export function offsetsOf(lines: FamilyLines): Uint32Array {
  const out = new Uint32Array(lines.count + 1);
  let k = 0;
  let pos = 0;
  for (const r of lines.runs) {
    const o = r.offsets;
    const shift = pos - o[r.from]!;
    for (let i = r.from; i < r.to; i++) out[++k] = (o[i + 1]! + shift) | 0;
    pos += o[r.to]! - o[r.from]!;
  }
  return out;
}

/** The index of the run that holds line `line` (runs sorted by `first`, none empty). */
export function runAt(runs: readonly LinesRun[], line: number): number {
  let lo = 0;
  let hi = runs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (runs[mid]!.first <= line) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** The lines of the pieces one after another: runs of their runs, no byte or offset copied. */
export function joinLines(parts: readonly LinesPiece[]): FamilyLines {
  const runs: LinesRun[] = [];
  let count = 0;
  for (const { lines, from, to } of parts) {
    if (to <= from) continue;
    for (let k = runAt(lines.runs, from); k < lines.runs.length; k++) {
      const r = lines.runs[k]!;
      if (r.first >= to) break;
      const a = r.from + Math.max(0, from - r.first);
      const b = r.from + Math.min(r.to - r.from, to - r.first);
      if (b <= a) continue;
      const last = runs[runs.length - 1];
      // The next lines of the same block (a piece ends where the next begins): one run.
      if (last && last.offsets === r.offsets && last.to === a) last.to = b;
      else runs.push({ bytes: r.bytes, offsets: r.offsets, from: a, to: b, first: count });
      count += b - a;
    }
  }
  const joined = { runs, count };
  if (runs.length <= MAX_PIECES) return joined;
  return whole(Buffer.concat(piecesOf(joined)), offsetsOf(joined));
}

/**
 * The flat SHA-256 of both families' lines: the digest of scheme 1 (revisions stored before
 * migration 0031), which a refresh compares with such a current revision (revision-digest.ts).
 */
export function flatDigestOfLines(v4: FamilyLines, v6: FamilyLines): string {
  const h = createHash("sha256");
  for (const p of piecesOf(v4)) h.update(p);
  for (const p of piecesOf(v6)) h.update(p);
  return `sha256:${h.digest("hex")}`;
}
