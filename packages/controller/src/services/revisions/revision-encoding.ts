import { setImmediate as yieldLoop } from "node:timers/promises";
import { promisify } from "node:util";
import { gunzipSync, gzip, gzipSync } from "node:zlib";
import { writePrefixLines } from "@rlc/shared/prefix";
import { contentFromEntries, type RevisionContent, type RevisionEntry, RevisionFamily, type RevisionTag } from "./revision-content.js";

/*
 * Stored form (gzip'd JSON, format 2), columnar:
 *   {"format":2,"modules":[ids],"tags":[[[communities],[module indexes]],...],
 *    "v4":{"prefixes":"p1 p2 ...","tags":[tag of p1, ...]},"v6":{...}}
 * Prefixes are one space-separated string (no escapes to undo, one split to read back).
 * Measured for 1M prefixes in 2 modules: 3.2 MB gzip'd, encode 0.22-0.47 s, decode 0.16-0.23 s.
 * The tuple form (`[[prefix, [communities], [module uuids]], ...]`) was 72 MB of JSON and
 * 4.1 MB gzip'd, encode 0.8-1.4 s, decode 1.9-2.3 s, and a million small arrays once decoded.
 */
const gzipAsync = promisify(gzip);

interface Stored {
  format: 2;
  modules: string[];
  tags: [string[], number[]][];
  v4: { prefixes: string; tags: number[] };
  v6: { prefixes: string; tags: number[] };
}

/** Plain JSON text compressed at a time (one gzip member each): ~1 MiB. */
const PIECE_CHARS = 1 << 20;

/** Text JSON writes as it is: no quote, backslash, control or non-ASCII character (a prefix's). */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** A piece of the stored JSON: its UTF-8 bytes, and its length in characters (what PIECE_CHARS counts). */
type JsonPiece = [bytes: Buffer, chars: number];

const SPACE = Uint8Array.of(32);

const textPiece = (text: string): JsonPiece => [Buffer.from(text, "utf8"), text.length];

/**
 * `tags` written as decimal numbers joined by commas, after a comma when `comma`: by hand into
 * bytes, as TypedArray.join takes ~0.2 s for the 1.2M tags of the bench's revision.
 */
function tagsPiece(tags: Uint32Array, comma: boolean): JsonPiece {
  const buf = Buffer.allocUnsafe(tags.length * 11 + 1);
  let pos = 0;
  for (let i = 0; i < tags.length; i++) {
    if (i > 0 || comma) buf[pos++] = 44;
    let v = tags[i]!;
    if (v < 10) {
      buf[pos++] = 48 + v;
      continue;
    }
    const start = pos;
    while (v > 0) {
      buf[pos++] = 48 + (v % 10);
      v = Math.floor(v / 10);
    }
    for (let a = start, b = pos - 1; a < b; a++, b--) {
      const t = buf[a]!;
      buf[a] = buf[b]!;
      buf[b] = t;
    }
  }
  return [buf.subarray(0, pos), pos];
}

/**
 * The stored JSON's text in pieces of about PIECE_CHARS: a family's prefixes and tags joined a
 * slice at a time, never the whole document (40 MB for 1.2M prefixes) or a whole column as one
 * string. Written as bytes: a slice of prefixes that needs no escaping (canonical prefixes never
 * do) is its joined text as Latin-1 bytes, without JSON.stringify's scan and copy; the text and
 * bytes are those of the string form it replaced (revision-store.test.ts compares the two).
 */
function* contentJson(c: RevisionContent): Generator<JsonPiece> {
  const head = JSON.stringify({ format: 2, modules: c.modules, tags: c.tags.map((t) => [t.communities, t.modules]) });
  yield textPiece(`${head.slice(0, -1)},`);
  for (const fam of ["v4", "v6"] as const) {
    const { tags } = c[fam];
    const count = c[fam].length;
    yield textPiece(`"${fam}":{"prefixes":"`);
    // A slice's JSON string without its quotes: escaping is per character, so the slices in a row
    // read as the one string of every prefix joined by spaces.
    const table = c[fam].table;
    const spaces = table ? [SPACE] : null;
    const zeros = table ? new Uint8Array(table.count) : null;
    const prefixes = table ? null : c[fam].texts();
    for (let i = 0; i < count; i += 50_000) {
      if (table) {
        // Written from the parsed prefixes: `p p … p ` (writePrefixLines, a space after each),
        // turned into the slice's text, ` p … p` after the first.
        const { bytes } = writePrefixLines(table, zeros!, spaces!, i, Math.min(count, i + 50_000));
        const sep = i ? 1 : 0;
        const out = Buffer.allocUnsafe(bytes.length - 1 + sep);
        if (sep) out[0] = 32;
        out.set(bytes.subarray(0, bytes.length - 1), sep);
        yield [out, out.length];
        continue;
      }
      const joined = prefixes!.slice(i, i + 50_000).join(" ");
      const sep = i ? 1 : 0;
      if (!PLAIN.test(joined)) {
        yield textPiece(`${i ? " " : ""}${JSON.stringify(joined).slice(1, -1)}`);
        continue;
      }
      const bytes = Buffer.allocUnsafe(joined.length + sep);
      if (sep) bytes[0] = 32;
      bytes.write(joined, sep, "latin1");
      yield [bytes, bytes.length];
    }
    yield textPiece(`","tags":[`);
    for (let i = 0; i < tags.length; i += 200_000) yield tagsPiece(tags.subarray(i, i + 200_000), i > 0);
    yield textPiece(fam === "v4" ? "]}," : "]}}");
  }
}

/** The stored JSON's bytes in pieces of about PIECE_CHARS characters, each compressed on its own. */
function* plainPieces(c: RevisionContent): Generator<Buffer> {
  let piece: Buffer[] = [];
  let chars = 0;
  const joined = () => (piece.length === 1 ? piece[0]! : Buffer.concat(piece));
  let any = false;
  for (const [bytes, n] of contentJson(c)) {
    piece.push(bytes);
    chars += n;
    if (chars >= PIECE_CHARS) {
      yield joined();
      any = true;
      piece = [];
      chars = 0;
    }
  }
  if (chars > 0 || !any) yield joined();
}

const asContent = (content: RevisionContent | { v4: readonly RevisionEntry[]; v6: readonly RevisionEntry[] }): RevisionContent =>
  content.v4 instanceof RevisionFamily ? (content as RevisionContent) : contentFromEntries(content.v4 as RevisionEntry[], content.v6 as RevisionEntry[]);

// Level 1: within a few percent of level 9 on this data, several times faster.
const GZIP = { level: 1 } as const;

/**
 * `content` may also be tuple lists (`{v4: [[prefix, communities, module_ids]], v6}`), as tests write them.
 * The JSON is compressed a piece at a time, each piece a gzip member of its own (RFC 1952
 * allows members in a row; gunzip reads them as one stream), so that the refresh that stores a
 * revision whole never holds the document as one string: for 1.2M prefixes that was ~80 MB more
 * at the refresh's peak (the joined columns, the document, its bytes). Only decodeContent reads
 * these bytes.
 */
export function encodeContent(content: RevisionContent | { v4: readonly RevisionEntry[]; v6: readonly RevisionEntry[] }): Buffer {
  const members: Buffer[] = [];
  for (const piece of plainPieces(asContent(content))) members.push(gzipSync(piece, GZIP));
  return Buffer.concat(members);
}

/**
 * The same bytes as encodeContent, made beside the event loop: each piece compressed on the
 * thread pool, and the loop let go between pieces (at 1.2M prefixes the whole encode holds it
 * ~0.3 s). What a revision's rewrite after its commit uses (compactLater).
 */
export async function encodeContentAsync(content: RevisionContent): Promise<Buffer> {
  const members: Promise<Buffer>[] = [];
  for (const piece of plainPieces(content)) {
    members.push(gzipAsync(piece, GZIP));
    await yieldLoop();
  }
  return Buffer.concat(await Promise.all(members));
}

export function decodeContent(data: Buffer): RevisionContent {
  const stored = JSON.parse(gunzipSync(data).toString("utf8")) as Stored;
  if (stored.format !== 2) throw new Error(`revision content format ${String(stored.format)} is not known`);
  const tags: RevisionTag[] = stored.tags.map(([communities, modules]) => ({ communities, modules }));
  const owner = { modules: stored.modules, tags };
  // Kept as the one text it was stored as: compact (RevisionFamily.fromJoined).
  const family = (f: Stored["v4"], family: 4 | 6) => RevisionFamily.fromJoined(f.prefixes, family, Uint32Array.from(f.tags), owner);
  return { ...owner, v4: family(stored.v4, 4), v6: family(stored.v6, 6) };
}
