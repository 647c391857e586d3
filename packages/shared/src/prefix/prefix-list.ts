import { type Family, wordCount, writeDecimal, writeIPv4, writeIPv6 } from "./address.js";
import { familyOf, HOST_BITS_CLEARED, NOT_CANONICAL, parsePrefixInto, scanIPv4Prefix, scanIPv6Prefix } from "./cidr.js";
import { PrefixError } from "./errors.js";
import type { PrefixSink } from "./words.js";

/**
 * Prefixes of one family packed into typed arrays: prefix i has its network address at
 * `words[i*W .. i*W+W)` and its length at `lens[i]`. The bulk algorithms work on these, so
 * half a million prefixes are two arrays, not half a million objects.
 */
export class PrefixList implements PrefixSink {
  readonly family: Family;
  readonly W: 1 | 4;
  words: Uint32Array;
  lens: Uint8Array;
  count = 0;
  /**
   * Texts that may stand for prefixes of this list, when `src` is set: prefix i's canonical
   * text is exactly `source[src[i]]` when src[i] >= 0 (unknown when -1), so formatting can
   * hand back the caller's own string instead of writing a new one. Lists parsed from text
   * have it; algorithms carry it to the prefixes they pass through unchanged.
   */
  source: readonly string[] | null = null;
  src: Int32Array | null = null;

  constructor(family: Family, capacity = 16) {
    this.family = family;
    this.W = wordCount(family);
    this.words = new Uint32Array(Math.max(capacity, 1) * this.W);
    this.lens = new Uint8Array(Math.max(capacity, 1));
  }

  /** Makes room for `extra` more prefixes; returns the index of the next one. */
  reserve(extra: number): number {
    const need = this.count + extra;
    if (need > this.lens.length) {
      const size = Math.max(need, this.lens.length * 2);
      const words = new Uint32Array(size * this.W);
      words.set(this.words.subarray(0, this.count * this.W));
      const lens = new Uint8Array(size);
      lens.set(this.lens.subarray(0, this.count));
      this.words = words;
      this.lens = lens;
      if (this.src) {
        const src = new Int32Array(size);
        src.set(this.src.subarray(0, this.count));
        this.src = src;
      }
    }
    return this.count;
  }

  push(words: Uint32Array, off: number, len: number): void {
    const i = this.reserve(1);
    const W = this.W;
    for (let w = 0; w < W; w++) this.words[i * W + w] = words[off + w]!;
    this.lens[i] = len;
    if (this.src) this.src[i] = -1;
    this.count = i + 1;
  }

  /**
   * Starts tracking source texts (see `source`): every prefix so far gets -1; whoever adds
   * prefixes other than by push() sets their src.
   */
  trackSource(source: readonly string[]): Int32Array {
    const src = new Int32Array(this.lens.length);
    src.fill(-1, 0, this.count);
    this.source = source;
    this.src = src;
    return src;
  }
}

/**
 * One PrefixList that lives as long as the module, so that the hidden class (map) of the
 * lists does too. V8 holds the maps of a class's instances only weakly, through the
 * transitions from its initial map: a full GC that finds no PrefixList alive (between two
 * calls, when nothing is left of the last one) frees them and deoptimises every function
 * optimised for them; the next call then runs unoptimised and re-learns the types. Measured
 * with a gc() before each aggregatePrefixes call of the bench's table, as the bench does
 * (median of 9 after 3 warm-up calls, Node 20): 110 ms without this anchor, 77 ms with it,
 * which is what a call takes without the gc(). A revision build after a full GC gains alike.
 */
export const PREFIX_LIST_ANCHOR: PrefixList = new PrefixList(4, 1);

/** Both families of a list of prefix texts, host bits cleared. */
export interface ParsedPrefixes {
  readonly v4: PrefixList;
  readonly v6: PrefixList;
  /** How many texts had host bits set (and cleared). */
  readonly masked: number;
}

/** Texts parsed per chunk: the chunk's strings are touched first (see parsePrefixList). */
const CHUNK = 256;
/** Written by parseChunk so that its touching loop is not optimised away; never read. */
const sink = { touched: 0 };

/**
 * Parses prefix texts (CIDRs or bare addresses) into packed lists, clearing host bits; each
 * list keeps the order of the texts. When `families` is given, families[i] is set to the
 * family of texts[i]. Text that is not an address or CIDR throws a PrefixError naming it.
 * Both lists track their source (PrefixList.source is `texts`): a text that is exactly the
 * canonical text of its prefix is handed back by formatPrefixList instead of a new string.
 * scanIPv4Prefix and scanIPv6Prefix read each text once and tell canonical text apart on the
 * way; parsePrefixInto stays the fallback for the rare forms and gives the error message.
 *
 * The texts are parsed in chunks of 256, each chunk's strings touched first (one character
 * of each): reading them is bound by cache misses when they lie scattered in memory, and the
 * short independent reads of the touching loop overlap their misses where the parser, one
 * string at a time, waits for each. Measured (CPU time, median of 11, Node 20) on the bench's
 * shuffled input, 806k texts: 125 ms touched first, 283 ms without (the parser before this
 * change: 291 ms). On the table in address order, 732k texts, the touching costs 5 ms:
 * 59 ms against 53 ms (before: 63 ms).
 */
export function parsePrefixList(texts: readonly string[], families?: Uint8Array): ParsedPrefixes {
  // IPv4 gets room for all; IPv6, at 21 bytes a prefix, gets room for 1.25 times its share of
  // a sample of the texts, and grows when that was too little (so the table's 168k IPv6
  // prefixes take one list of 219k, 4.6 MB, instead of six doublings from 4096: 11 MB).
  const n = texts.length;
  const v4 = new PrefixList(4, n);
  const v6 = new PrefixList(6, ipv6Room(texts));
  v4.trackSource(texts);
  v6.trackSource(texts);
  let masked = 0;
  for (let base = 0; base < n; base += CHUNK) masked += parseChunk(texts, base, Math.min(n, base + CHUNK), v4, v6, families);
  return { v4, v6, masked };
}

/**
 * parsePrefixList for texts[base .. end): touches them, then parses them into v4 and v6 (v4
 * has room for all); returns how many had host bits. A function per chunk rather than one
 * loop over all texts, so that V8 optimises it whole after a few calls, instead of compiling
 * the long loop while it runs (on-stack replacement) and dropping that code at the loop's end
 * for want of type feedback there: the first calls reach full speed sooner.
 */
function parseChunk(texts: readonly string[], base: number, end: number, v4: PrefixList, v6: PrefixList, families: Uint8Array | undefined): number {
  let touch = 0;
  for (let i = base; i < end; i++) {
    const t = texts[i]!;
    touch = (touch + t.charCodeAt(t.length - 1)) | 0;
  }
  sink.touched = touch;
  const words4 = v4.words;
  const lens4 = v4.lens;
  const src4 = v4.src!;
  let words6 = v6.words;
  let lens6 = v6.lens;
  let src6 = v6.src!;
  let c4 = v4.count;
  let c6 = v6.count;
  let masked = 0;
  for (let i = base; i < end; i++) {
    const text = texts[i]!;
    const result4 = scanIPv4Prefix(text, words4, c4);
    if (result4 >= 0) {
      masked += storeScan(result4, i, src4, lens4, c4++);
      if (families) families[i] = 4;
      continue;
    }
    if (c6 === lens6.length) {
      v6.count = c6;
      v6.reserve(1);
      src6 = v6.src!;
      words6 = v6.words;
      lens6 = v6.lens;
    }
    const result6 = scanIPv6Prefix(text, words6, c6 * 4);
    if (result6 >= 0) {
      masked += storeScan(result6, i, src6, lens6, c6++);
      if (families) families[i] = 6;
      continue;
    }
    v4.count = c4;
    v6.count = c6;
    const other = addOther(text, v4, v6);
    c4 = v4.count;
    c6 = v6.count;
    src6 = v6.src!;
    words6 = v6.words;
    lens6 = v6.lens;
    masked += other & 1;
    if (families) families[i] = other >= 2 ? 4 : 6;
  }
  v4.count = c4;
  v6.count = c6;
  return masked;
}

/**
 * Stores what scanIPv4Prefix / scanIPv6Prefix answered for texts[i] at row `row`: the length,
 * and the text's index as its source unless the text is not canonical (-1: it is written
 * anew). Returns 1 when host bits were cleared, else 0. Small enough for V8 to inline.
 */
function storeScan(result: number, i: number, src: Int32Array, lens: Uint8Array, row: number): number {
  if (result < NOT_CANONICAL) {
    src[row] = i;
    lens[row] = result;
    return 0;
  }
  result -= NOT_CANONICAL;
  src[row] = -1;
  const cleared = result >= HOST_BITS_CLEARED ? 1 : 0;
  lens[row] = cleared ? result - HOST_BITS_CLEARED : result;
  return cleared;
}

/** Room for the IPv6 prefixes of `texts`, from a sample of 64 of them (see parsePrefixList). */
function ipv6Room(texts: readonly string[]): number {
  const n = texts.length;
  if (n <= 4096) return n;
  let v6 = 0;
  for (let k = 0; k < 64; k++) {
    const text = texts[Math.floor(((k + 0.5) * n) / 64)];
    if (typeof text === "string" && text.indexOf(":") >= 0) v6++;
  }
  return Math.min(n, Math.ceil((n * 1.25 * v6) / 64) + 4096);
}

/**
 * parsePrefixList for a text that both scanners refused: the rare forms (a dotted quad in
 * IPv6), or an error. Returns 2 when it went to v4, 0 to v6, plus 1 when host bits were cleared.
 */
function addOther(text: string, v4: PrefixList, v6: PrefixList): number {
  let list = v4;
  let result: number | string;
  if (familyOf(text) === 4) {
    result = parsePrefixInto(text, 4, v4.words, v4.count);
  } else {
    list = v6;
    result = parsePrefixInto(text, 6, v6.words, v6.reserve(1) * 4);
  }
  if (typeof result === "string") {
    throw new PrefixError("invalid_address", text, `${JSON.stringify(text)} is not an IP prefix: ${result}`);
  }
  let flags = list === v4 ? 2 : 0;
  if (result >= HOST_BITS_CLEARED) {
    flags++;
    result -= HOST_BITS_CLEARED;
  }
  list.lens[list.count] = result;
  list.src![list.count++] = -1; // written anew (a mapped address may be canonical: rare)
  return flags;
}

const ASCII = new TextDecoder();

/**
 * Canonical texts of the prefixes of `list` (only those with keep[i] === 1 when `keep` is
 * given), in list order, appended to `out`. A prefix whose source text is known to be its
 * canonical text (PrefixList.src) gets that very string; the others are written as ASCII into
 * one buffer and cut apart with one split: measured 2-3x faster than building each string by
 * concatenation, and far less garbage for the collector (half a million strings per call).
 */
export function formatPrefixList(list: PrefixList, keep?: Uint8Array, out: string[] = []): string[] {
  const { src, source, count } = list;
  if (src === null || source === null) return writePrefixList(list, keep, out, count);
  let total = count;
  if (keep !== undefined) {
    total = 0;
    for (let i = 0; i < count; i++) if (keep[i] === 1) total++;
  }
  // One pass hands back the source texts and notes the prefixes to write (list index and
  // place in `out`); those are then written together. `out` is sized once and filled by
  // index: 1.8 ms for 139k texts, against 5 ms pushing them one by one.
  let at = out.length;
  out.length = at + total;
  let pending: Int32Array | null = null;
  let np = 0;
  for (let i = 0; i < count; i++) {
    if (keep !== undefined && keep[i] !== 1) continue;
    const s = src[i]!;
    if (s >= 0) {
      out[at] = source[s]!;
    } else {
      pending ??= new Int32Array(2 * total);
      pending[np++] = i;
      pending[np++] = at;
    }
    at++;
  }
  if (pending !== null) {
    const texts = writeListed(list, pending, np);
    for (let k = 0; k < np; k += 2) out[pending[k + 1]!] = texts[k >> 1]!;
  }
  return out;
}

/** Writes prefixes pending[0], pending[2], … of `list` (see formatPrefixList) anew. */
function writeListed(list: PrefixList, pending: Int32Array, np: number): string[] {
  const { words, lens, W } = list;
  const buf = new Uint8Array((np >> 1) * (W === 1 ? 19 : 44));
  let pos = 0;
  for (let k = 0; k < np; k += 2) {
    const i = pending[k]!;
    if (k > 0) buf[pos++] = 10;
    pos = W === 1 ? writeIPv4(words, i, buf, pos) : writeIPv6(words, i * 4, buf, pos);
    buf[pos++] = 47;
    pos = writeDecimal(buf, pos, lens[i]!);
  }
  return ASCII.decode(buf.subarray(0, pos)).split("\n");
}

/** formatPrefixList without source texts: every text written anew. */
function writePrefixList(list: PrefixList, keep: Uint8Array | undefined, out: string[], kept: number): string[] {
  const { words, lens, W, count } = list;
  const buf = new Uint8Array(kept * (W === 1 ? 19 : 44)); // `kept`: at most this many to write
  let pos = 0;
  let written = 0;
  for (let i = 0; i < count; i++) {
    if (keep && keep[i] !== 1) continue;
    if (written++ > 0) buf[pos++] = 10;
    pos = W === 1 ? writeIPv4(words, i, buf, pos) : writeIPv6(words, i * 4, buf, pos);
    buf[pos++] = 47;
    pos = writeDecimal(buf, pos, lens[i]!);
  }
  if (written === 0) return out;
  const texts = ASCII.decode(buf.subarray(0, pos)).split("\n");
  if (out.length === 0) return texts;
  for (const text of texts) out.push(text);
  return out;
}
