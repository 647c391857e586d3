import { createHash, hash } from "node:crypto";
import { type PrefixTable, parsePrefixList, tableOf } from "@rlc/shared/prefix";
import type { RevisionContent, RevisionFamily } from "./revision-content.js";
import { type FamilyLines, flatDigestOfLines, linesOf, runAt, suffixesOf } from "./revision-lines.js";

/*
 * A revision's digest (scheme 2): the lines it covers (`prefix communities\n` a prefix, in
 * address order; revision-lines.ts) are grouped by the top bits of each prefix's address (IPv4
 * 12 bits, IPv6 20 bits: a few thousand groups in a million-prefix tenant), each group hashed
 * with SHA-256, and the digest is the SHA-256 of every group's record, IPv4 groups then IPv6
 * ones in address order: one byte for the family (4 or 6), the group's top bits as a 32-bit
 * big-endian number, the group's 32-byte hash. An incremental rebuild hashes again only the
 * groups its replaced ranges touch; a flat SHA-256 of the ~34 MB of a 1.2M-prefix revision's
 * lines cost every refresh ~22 ms, whatever it changed (scheme 1, `flatDigestOfLines`: the
 * digests of revisions stored before migration 0031, `revisions.digest_scheme`).
 */

/** The scheme this controller computes (revisions.digest_scheme). */
export const DIGEST_SCHEME = 2;

/** How many low bits of a prefix's first address word its group leaves out, per family. */
const SHIFT = { 4: 20, 6: 12 } as const;
const SUM = 32;

/** One family's groups: their keys (ascending) and each one's SHA-256 (SUM bytes a key). */
export interface DigestGroups {
  keys: Uint32Array;
  sums: Buffer;
}

const keyAt = (t: PrefixTable, i: number, shift: number) => t.words[i * t.W]! >>> shift;

/** The first position in [from, to) of `t` whose group key is above `key` (keys ascend with the addresses). */
function endOfKey(t: PrefixTable, key: number, from: number, to: number, shift: number): number {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keyAt(t, mid, shift) <= key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * SHA-256 of lines [from, to) of `lines`, as a string of its 32 bytes ("binary": latin1): a string lives in
 * V8's heap, where a Buffer a group is memory outside it, whose every allocation during a
 * collection's marking had V8 advance the marking there and then (a refresh right after a full
 * build spent 20-40 ms of its main thread in the hashes' digest calls: a CPU profile with
 * --trace-gc in bench/refresh-apply.mjs).
 */
function sumOf(lines: FamilyLines, from: number, to: number): string {
  const runs = lines.runs;
  let k = runAt(runs, from);
  const r = runs[k]!;
  if (r.first + (r.to - r.from) >= to) {
    const a = r.from + (from - r.first);
    return hash("sha256", r.bytes.subarray(r.offsets[a]!, r.offsets[a + (to - from)]!), "binary");
  }
  const h = createHash("sha256");
  for (; k < runs.length; k++) {
    const run = runs[k]!;
    if (run.first >= to) break;
    const a = run.from + Math.max(0, from - run.first);
    const b = run.from + Math.min(run.to - run.from, to - run.first);
    if (b > a) h.update(run.bytes.subarray(run.offsets[a]!, run.offsets[b]!));
  }
  return h.digest("binary");
}

/** The groups' hashes in one buffer: runs of kept ones (views of the last build's) and new ones (sumOf's strings). */
function sumsOf(parts: readonly (Buffer | string)[], count: number): Buffer {
  const out = Buffer.allocUnsafeSlow(count * SUM);
  let at = 0;
  for (const p of parts) {
    if (typeof p === "string") at += out.write(p, at, "latin1");
    else at += p.copy(out, at);
  }
  return out;
}

/** Every group of a family's lines (`table` holds its prefixes, in the lines' order). */
export function groupsOf(table: PrefixTable, lines: FamilyLines): DigestGroups {
  const shift = SHIFT[table.family];
  const keys: number[] = [];
  const sums: string[] = [];
  for (let i = 0; i < table.count; ) {
    const key = keyAt(table, i, shift);
    const end = endOfKey(table, key, i, table.count, shift);
    keys.push(key);
    sums.push(sumOf(lines, i, end));
    i = end;
  }
  return { keys: Uint32Array.from(keys), sums: sumsOf(sums, keys.length) };
}

/** The keys of the groups that positions [from, to) of `t` fall in, added to `into`. */
function keysIn(t: PrefixTable, from: number, to: number, shift: number, into: number[]): void {
  for (let i = from; i < to; ) {
    const key = keyAt(t, i, shift);
    into.push(key);
    i = endOfKey(t, key, i, to, shift);
  }
}

/**
 * The groups of a family made by replacing ranges of its last content (`change`: old lines
 * [from, to) became new lines [at, at + count); the kept lines are the old ones, byte for byte):
 * the groups those ranges touch hashed again from the new lines, the others' hashes kept.
 */
export function regroup(
  old: DigestGroups,
  oldTable: PrefixTable,
  table: PrefixTable,
  lines: FamilyLines,
  change: readonly { from: number; to: number; at: number; count: number }[],
): DigestGroups {
  const shift = SHIFT[table.family];
  const found: number[] = [];
  for (const c of change) {
    keysIn(oldTable, c.from, c.to, shift, found);
    keysIn(table, c.at, c.at + c.count, shift, found);
  }
  if (!found.length) return old;
  const touched = Uint32Array.from(found).sort();
  const keys: number[] = [];
  const sums: (Buffer | string)[] = [];
  let o = 0;
  let prev = -1;
  for (const key of touched) {
    if (key === prev) continue;
    prev = key;
    // The old groups before this key, kept as they were.
    const keep = o;
    while (o < old.keys.length && old.keys[o]! < key) keys.push(old.keys[o++]!);
    if (o > keep) sums.push(old.sums.subarray(keep * SUM, o * SUM));
    if (o < old.keys.length && old.keys[o] === key) o++;
    const from = endOfKey(table, key - 1, 0, table.count, shift);
    const to = endOfKey(table, key, from, table.count, shift);
    if (to > from) {
      keys.push(key);
      sums.push(sumOf(lines, from, to));
    }
  }
  const keep = o;
  while (o < old.keys.length) keys.push(old.keys[o++]!);
  if (o > keep) sums.push(old.sums.subarray(keep * SUM, o * SUM));
  return { keys: Uint32Array.from(keys), sums: sumsOf(sums, keys.length) };
}

/** The revision digest (scheme 2) of both families' groups. */
export function digestOfGroups(v4: DigestGroups, v6: DigestGroups): string {
  const records = Buffer.allocUnsafe((v4.keys.length + v6.keys.length) * (5 + SUM));
  let at = 0;
  for (const [family, g] of [
    [4, v4],
    [6, v6],
  ] as const) {
    for (let k = 0; k < g.keys.length; k++) {
      records[at] = family;
      records.writeUInt32BE(g.keys[k]!, at + 1);
      g.sums.copy(records, at + 5, k * SUM, (k + 1) * SUM);
      at += 5 + SUM;
    }
  }
  return `sha256:${hash("sha256", records, "hex")}`;
}

/** A family's prefixes parsed: its table, or its texts parsed (a hand-made content has texts alone). */
function tableOfFamily(f: RevisionFamily, family: 4 | 6): PrefixTable {
  return f.table ?? tableOf(parsePrefixList(f.texts())[family === 4 ? "v4" : "v6"]);
}

/** Both families' lines, written from their prefixes. */
function linesOfContent(content: RevisionContent) {
  const suffixes = suffixesOf(content.tags);
  const v4 = tableOfFamily(content.v4, 4);
  const v6 = tableOfFamily(content.v6, 6);
  return { v4, v6, lines: { v4: linesOf(v4, content.v4.tags, suffixes), v6: linesOf(v6, content.v6.tags, suffixes) } };
}

/** The digest of a content (it covers what routers receive, prefix and communities, not the attribution). */
export function digestOf(content: RevisionContent): string {
  const { v4, v6, lines } = linesOfContent(content);
  return digestOfGroups(groupsOf(v4, lines.v4), groupsOf(v6, lines.v6));
}

/** The digest of scheme 1 of a content: what a revision stored before migration 0031 has. */
export function flatDigestOf(content: RevisionContent): string {
  const { lines } = linesOfContent(content);
  return flatDigestOfLines(lines.v4, lines.v6);
}

/**
 * Whether `built` has the content of the revision `row`, by the digest of row's scheme: a
 * revision stored before migration 0031 has the flat digest, which is then computed for
 * `built` (tens of milliseconds at 1.2M prefixes, until a refresh stores a revision again).
 */
export function sameDigest(row: { digest: string; digest_scheme: number }, built: { digest: string; content: RevisionContent }): boolean {
  if (row.digest_scheme === DIGEST_SCHEME) return row.digest === built.digest;
  return row.digest === flatDigestOf(built.content);
}
