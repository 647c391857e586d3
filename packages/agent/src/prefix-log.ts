import { createHash } from "node:crypto";
import { PREFIX_DELTA_FORMAT, PREFIX_SECTION_FORMAT, sha256Hex } from "@rlc/shared/bundle";

// The prefix section of the revision BIRD runs, as the state directory keeps it: a base section
// plus a log of the delta scripts applied since, so that an apply writes what changed rather
// than the whole section. This file is the log's format and its reading; the files themselves
// are state.ts's.
//
// A record, all integers big-endian:
//   "rlp1"                          4 bytes, what a record starts with
//   revision_id                     8 bytes, the revision the record gives
//   SHA-256 of the section before  32 bytes (what the delta applies to)
//   SHA-256 of the section after   32 bytes (the signed prefixes_sha256)
//   length of the delta             4 bytes
//   the delta (rl-prefix-delta/1)   as signed
//   SHA-256 of all the above       32 bytes
// The last hash makes a record cut short by a crash (or any other bytes) read as no record.

const MAGIC = Buffer.from("rlp1", "latin1");
const HEAD = 4 + 8 + 32 + 32 + 4;
const SUM = 32;

/** One delta applied: the revision it gives, the sections it goes from and to, its bytes. */
export interface LogRecord {
  revision_id: number;
  baseSha256: string;
  sha256: string;
  delta: Uint8Array;
}

/** A record as read back, with where it ends in the log. */
interface ReadRecord extends LogRecord {
  end: number;
}

export function encodeLogRecord(record: LogRecord): Buffer {
  const size = HEAD + record.delta.length;
  const out = Buffer.allocUnsafe(size + SUM);
  MAGIC.copy(out, 0);
  out.writeUInt32BE(Math.floor(record.revision_id / 2 ** 32), 4);
  out.writeUInt32BE(record.revision_id >>> 0, 8);
  shaBytes(record.baseSha256).copy(out, 12);
  shaBytes(record.sha256).copy(out, 44);
  out.writeUInt32BE(record.delta.length, 76);
  out.set(record.delta, HEAD);
  createHash("sha256").update(out.subarray(0, size)).digest().copy(out, size);
  return out;
}

/** The log's whole records from its start, up to the first that is cut short or damaged. */
export function* readLogRecords(log: Buffer): Generator<ReadRecord> {
  for (let at = 0; at + HEAD + SUM <= log.length; ) {
    if (!log.subarray(at, at + 4).equals(MAGIC)) return;
    const size = HEAD + log.readUInt32BE(at + 76);
    if (at + size + SUM > log.length) return;
    const sum = createHash("sha256")
      .update(log.subarray(at, at + size))
      .digest();
    if (!sum.equals(log.subarray(at + size, at + size + SUM))) return;
    yield {
      revision_id: log.readUInt32BE(at + 4) * 2 ** 32 + log.readUInt32BE(at + 8),
      baseSha256: log.toString("hex", at + 12, at + 44),
      sha256: log.toString("hex", at + 44, at + 76),
      delta: log.subarray(at + HEAD, at + size),
      end: at + size + SUM,
    };
    at += size + SUM;
  }
}

/** The section rebuilt, and where the log ends that gives it: the next record is written there. */
export interface RebuiltPrefixes {
  section: Buffer;
  sha256: string;
  /** Bytes of the log's records up to the one that gives the section (0: the base itself). */
  end: number;
  records: number;
}

/**
 * The section of `target` (what applied.json names): the base, then the log's records in order
 * up to the first that gives that revision with that SHA-256. Records after it (written before a
 * crash kept applied.json from naming them) are not read. Null when the records up to there do
 * not chain from the base (each applies to the SHA-256 the one before gave, the first to the
 * base's), one of them is cut short, or the rebuilt section is not the one named.
 */
export function rebuildPrefixes(base: Buffer, log: Buffer | null, target: { revision_id: number; sha256: string }): RebuiltPrefixes | null {
  const baseSha256 = sha256Hex(base);
  const chain: ReadRecord[] = [];
  let sha256 = baseSha256;
  let found = false;
  for (const record of readLogRecords(log ?? Buffer.alloc(0))) {
    if (record.baseSha256 !== sha256) break;
    chain.push(record);
    sha256 = record.sha256;
    if (record.revision_id === target.revision_id && record.sha256 === target.sha256) {
      found = true;
      break;
    }
  }
  // No record gives it: the base does, when the last full write was the last apply (and the
  // log holds only what a crash left after it, or what came before that base).
  if (!found) return baseSha256 === target.sha256 ? { section: base, sha256: baseSha256, end: 0, records: 0 } : null;
  let section: Buffer;
  try {
    section = replayDeltas(
      base,
      chain.map((r) => r.delta),
    );
  } catch {
    return null;
  }
  // Hashed once, at the end: a record's own SHA-256 only says which section it claims to give.
  if (sha256Hex(section) !== target.sha256) return null;
  return { section, sha256: target.sha256, end: (chain.at(-1) as ReadRecord).end, records: chain.length };
}

const NL = 0x0a;
const SECTION_HEAD = Buffer.from(`${PREFIX_SECTION_FORMAT}\n`, "latin1");
const DELTA_HEAD = Buffer.from(`${PREFIX_DELTA_FORMAT}\n`, "latin1");

/** A section and where each of its lines starts, plus one entry: its end. */
interface Indexed {
  section: Buffer;
  starts: Uint32Array;
}

/**
 * The section that the edit scripts make of `base`, one after the other: what applyPrefixDeltaBytes
 * (@rlc/shared/bundle) gives applied to each in turn, and it throws where that does. The base's
 * lines are found once; each script then carries the index over to the section it makes (a kept
 * run is one copy of bytes and of shifted line starts), so a record costs a copy of the section,
 * not a search for its lines.
 */
export function replayDeltas(base: Buffer, deltas: readonly Uint8Array[]): Buffer {
  checkFramed(base, SECTION_HEAD);
  const starts: number[] = [];
  for (let at = SECTION_HEAD.length; at < base.length; at = base.indexOf(NL, at) + 1) starts.push(at);
  starts.push(base.length);
  let current: Indexed = { section: base, starts: Uint32Array.from(starts) };
  // Two sections in turn, each written over the one before last when it is big enough: a fresh
  // 34 MB buffer for each record costs its pages' first touch, more than the copy itself. (Each
  // allocated apart from Node's shared pool, so that its memory is this function's to reuse.)
  let spare: Indexed | null = null;
  for (const delta of deltas) {
    const next = applyIndexed(current, Buffer.from(delta.buffer, delta.byteOffset, delta.length), spare);
    spare = current.section === base ? null : current;
    current = next;
  }
  return current.section;
}

function applyIndexed(base: Indexed, script: Buffer, spare: Indexed | null): Indexed {
  checkFramed(script, DELTA_HEAD);
  const baseLines = base.starts.length - 1;
  // First the steps, checked, with the new section's size and line count: then one buffer.
  const kinds: number[] = [];
  const values: number[] = [];
  const ends: number[] = [];
  let size = SECTION_HEAD.length;
  let lines = 0;
  let cursor = 0;
  for (let p = DELTA_HEAD.length; p < script.length; ) {
    const end = script.indexOf(NL, p);
    const kind = script[p] as number;
    if (kind === 0x2b) {
      kinds.push(kind);
      values.push(p + 1);
      ends.push(end + 1);
      size += end - p;
      lines++;
    } else {
      let n = 0;
      for (let k = p + 1; k < end && n >= 0; k++) {
        const d = (script[k] as number) - 48;
        n = d < 0 || d > 9 || n > 2 ** 40 ? -1 : n * 10 + d;
      }
      if ((kind !== 0x3d && kind !== 0x2d) || end === p + 1 || n < 1 || cursor + n > baseLines) {
        throw new Error(`prefix delta step ${script.toString("utf8", p, Math.min(end, p + 20))} does not fit a base of ${baseLines} lines`);
      }
      kinds.push(kind);
      values.push(n);
      ends.push(0);
      if (kind === 0x3d) {
        size += (base.starts[cursor + n] as number) - (base.starts[cursor] as number);
        lines += n;
      }
      cursor += n;
    }
    p = end + 1;
  }
  if (cursor !== baseLines) throw new Error(`prefix delta covers ${cursor} of the base's ${baseLines} lines`);
  const section = spare && spare.section.buffer.byteLength >= size ? Buffer.from(spare.section.buffer, 0, size) : Buffer.allocUnsafeSlow(size);
  SECTION_HEAD.copy(section, 0);
  const starts = spare && spare.starts.buffer.byteLength >= (lines + 1) * 4 ? new Uint32Array(spare.starts.buffer, 0, lines + 1) : new Uint32Array(lines + 1);
  let at = SECTION_HEAD.length;
  let j = 0;
  cursor = 0;
  for (let k = 0; k < kinds.length; k++) {
    const kind = kinds[k];
    const value = values[k] as number;
    if (kind === 0x2b) {
      // A line of a few dozen bytes: a loop costs less than a call to copy it.
      starts[j++] = at;
      for (let b = value, end = ends[k] as number; b < end; b++) section[at++] = script[b] as number;
      continue;
    }
    if (kind === 0x3d) {
      const from = base.starts[cursor] as number;
      const to = base.starts[cursor + value] as number;
      const shift = at - from;
      for (let i = cursor; i < cursor + value; i++) starts[j++] = (base.starts[i] as number) + shift;
      section.set(base.section.subarray(from, to), at);
      at += to - from;
    }
    cursor += value;
  }
  starts[lines] = at;
  return { section, starts };
}

function checkFramed(bytes: Buffer, head: Buffer): void {
  if (bytes.length < head.length || !bytes.subarray(0, head.length).equals(head) || bytes[bytes.length - 1] !== NL) {
    throw new Error(`not ${head.toString("latin1").trim()}`);
  }
}

function shaBytes(hex: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw new Error(`not a SHA-256: ${hex.slice(0, 80)}`);
  return Buffer.from(hex, "hex");
}
