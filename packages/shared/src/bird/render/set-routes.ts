import type { ChunkedSection, KeptRun, SectionChunk } from "../../bundle/chunked-section.js";
import { isPlainV4Prefix, prefix, RenderError } from "./values.js";

// A community set's route file written from a chunked section (section-statics.ts renders with
// it): each chunk's lines by tag counted once (its tally), the set's lines found from the
// tallies, and the file written with the runs of routes its last file holds copied from there,
// only the other routes written byte by byte, with the check text `bird -p` reads.

/**
 * A chunk's lines by tag, counted once for as long as the chunk lives (an unchanged chunk is the
 * same object in the next section): `[tag, lines, bytes of their prefixes]` for each tag it has.
 * `index`: where the chunk is in the last render's section, when `stamp` is the render's.
 */
export interface Tally {
  /** A plain array: a typed array a chunk would be a buffer of its own for the GC to track, a thousand of them a delta. */
  entries: number[];
  index: number;
  stamp: number;
}

export const ROUTE = Buffer.from("\n  route ", "latin1");
export const END_TEXT = "\n}\n";
export const END = Buffer.from(END_TEXT, "latin1");

/**
 * A set's last file, to copy routes from: `at[j]`, where its routes of the last section's chunk j
 * start (`at[chunks]`: where they end, `end`); `n[j]`, how many of its routes come before them.
 */
export interface OldFile {
  bytes: Buffer;
  at: Uint32Array;
  n: Uint32Array;
  end: number;
}

/** A chunk's tally, counted the first time it is asked for (one pass over the chunk's tags). */
export function tallier(tallies: WeakMap<SectionChunk, Tally>, tagCount: number): (chunk: SectionChunk) => Tally {
  const at = new Int32Array(tagCount).fill(-1);
  const found: number[] = [];
  return (chunk) => {
    let tally = tallies.get(chunk);
    if (tally) return tally;
    const { tagOf, prefixLength, count } = chunk;
    for (let j = 0; j < count; j++) {
      const tag = tagOf[j] as number;
      let e = at[tag] as number;
      if (e < 0) {
        at[tag] = e = found.length;
        found.push(tag, 0, 0);
      }
      found[e + 1] = (found[e + 1] as number) + 1;
      found[e + 2] = (found[e + 2] as number) + (prefixLength[j] as number);
    }
    const entries = found.slice();
    for (let e = 0; e < found.length; e += 3) at[found[e] as number] = -1;
    found.length = 0;
    tally = { entries, index: 0, stamp: 0 };
    tallies.set(chunk, tally);
    return tally;
  };
}

/**
 * For each chosen set (`slot[tag]`, -1: not chosen), its lines in the section's order that are
 * read one by one: in the chunks marked `rebuilt`, and in every chunk for a set marked `whole`.
 * `counts`: how many that is for each set (from the tallies).
 */
export function linesOfSets(section: ChunkedSection, slot: Int32Array, counts: Uint32Array, rebuilt: Uint8Array, whole: Uint8Array): Uint32Array[] {
  const { chunks, first } = section;
  const lines = Array.from(counts, (n) => new Uint32Array(n));
  const at = new Uint32Array(counts.length);
  const anyWhole = whole.includes(1);
  for (let k = 0; k < chunks.length; k++) {
    const all = rebuilt[k] === 1;
    if (!all && !anyWhole) continue;
    const { tagOf, count } = chunks[k] as SectionChunk;
    const base = first[k] as number;
    for (let j = 0; j < count; j++) {
      const set = slot[tagOf[j] as number] as number;
      if (set < 0 || (!all && whole[set] === 0)) continue;
      (lines[set] as Uint32Array)[at[set] as number] = base + j;
      at[set] = (at[set] as number) + 1;
    }
  }
  return lines;
}

/** What a set's file is written from: its lines to read one by one, and its last file with the chunks that are not `rebuilt`. */
export interface SetSource {
  section: ChunkedSection;
  /** The set's number in `slot`. */
  k: number;
  slot: Int32Array;
  tallyOf: (chunk: SectionChunk) => Tally;
  /** The render's stamp on the last section's chunks' tallies. */
  stamp: number;
  /** The delta's runs of kept lines in each rebuilt chunk: the set's routes in them are copied from `old` too, where their base chunk was in the last section. */
  kept: Map<SectionChunk, readonly KeptRun[]> | null;
  rebuilt: Uint8Array | null;
  /** For a chunk not rebuilt, its index in the last section. */
  lastIndex: Int32Array | null;
  lines: Uint32Array;
  old: OldFile | null;
  /** Whether to answer where the routes of each chunk landed (`places`). */
  places: boolean;
}

/**
 * A set's file: its head, `\n  route <prefix> <kind>;` a route, `\n}\n`; `size` bytes. The routes
 * of a chunk the last section had too are copied from the last file (`old`), the others written
 * from the chunk's bytes. `checks`: which routes are checked (checkPrefix) — the delta's added
 * lines (ascending; answered as `[route's position in the file, from, to]` triples for the check
 * text), or every line when null; without it, none (a file made again). `places` (when asked):
 * where the routes of each chunk of `section` start in the file and how many come before, as
 * {@link OldFile} has them, for the next render to copy from this file without counting.
 */
export function writeSet(
  from: SetSource,
  head: Buffer,
  tail: Buffer,
  size: number,
  checks: { added: Uint32Array | null; family: 4 | 6 } | null,
): { text: Buffer; added: number[]; places: { at: Uint32Array; n: Uint32Array } | null } {
  const { section, k, slot, tallyOf, stamp, kept, rebuilt, lastIndex, lines, old } = from;
  const { chunks, first } = section;
  const added = checks?.added ?? null;
  const text = Buffer.allocUnsafe(size);
  let o = head.copy(text, 0);
  // The run of the last file waiting to be copied.
  let runFrom = 0;
  let runTo = 0;
  const flush = () => {
    if (runTo > runFrom) o += (old as OldFile).bytes.copy(text, o, runFrom, runTo);
    runFrom = runTo = 0;
  };
  const route1 = ROUTE.length + tail.length;
  // Where the set's routes of a base chunk's lines are in the last file: the chunk, its line, and where that line's route (if the set's) is.
  let cursor: { chunk: SectionChunk | null; line: number; at: number } = { chunk: null, line: 0, at: 0 };
  /** The last file's bytes of the set's routes in a kept run, and how many; null when its base chunk was not in the last section. */
  const placeOf = (run: KeptRun): { from: number; to: number; count: number } | null => {
    const b = run.chunk;
    if (!old) return null;
    const tally = tallyOf(b);
    if (tally.stamp !== stamp) return null;
    if (cursor.chunk !== b || cursor.line > run.from) cursor = { chunk: b, line: 0, at: old.at[tally.index] as number };
    const { tagOf, prefixLength } = b;
    let at = cursor.at;
    for (let j = cursor.line; j < run.from; j++) if (slot[tagOf[j] as number] === k) at += route1 + (prefixLength[j] as number);
    let to = at;
    let count = 0;
    for (let j = run.from; j < run.from + run.n; j++) {
      if (slot[tagOf[j] as number] !== k) continue;
      to += route1 + (prefixLength[j] as number);
      count++;
    }
    cursor = { chunk: b, line: run.from + run.n, at: to };
    return { from: at, to, count };
  };
  const found: number[] = [];
  let route = 0;
  let n = 0;
  let a = 0;
  const placeAt = from.places ? new Uint32Array(chunks.length + 1) : null;
  const placeN = from.places ? new Uint32Array(chunks.length + 1) : null;
  for (let c = 0; c < chunks.length; c++) {
    if (placeAt && placeN) {
      placeAt[c] = o + runTo - runFrom;
      placeN[c] = route;
    }
    if (old && rebuilt?.[c] === 0) {
      const index = (lastIndex as Int32Array)[c] as number;
      const count = (old.n[index + 1] as number) - (old.n[index] as number);
      if (count === 0) continue;
      const bytes = (old.at[index + 1] as number) - (old.at[index] as number);
      const at = old.at[index] as number;
      if (at !== runTo) {
        flush();
        runFrom = at;
      }
      runTo = at + bytes;
      route += count;
      continue;
    }
    const end = first[c + 1] as number;
    if (n >= lines.length || (lines[n] as number) >= end) continue;
    const base = first[c] as number;
    const chunk = chunks[c] as SectionChunk;
    const { bytes, starts, prefixLength } = chunk;
    const runs = old ? kept?.get(chunk) : undefined;
    let next = 0;
    for (; n < lines.length && (lines[n] as number) < end; n++) {
      const i = lines[n] as number;
      const j = i - base;
      // A line of a kept run: the run's routes copied from the last file, when it has them.
      if (runs) {
        while (next < runs.length && (runs[next] as KeptRun).at + (runs[next] as KeptRun).n <= j) next++;
        const run = runs[next];
        const place = run && run.at <= j ? placeOf(run) : null;
        if (place) {
          if (place.from !== runTo) {
            flush();
            runFrom = place.from;
          }
          runTo = place.to;
          route += place.count;
          next++;
          const stop = base + (run as KeptRun).at + (run as KeptRun).n;
          while (n + 1 < lines.length && (lines[n + 1] as number) < stop) n++;
          continue;
        }
      }
      flush();
      const p = starts[j] as number;
      const q = p + (prefixLength[j] as number);
      let isNew = checks !== null && added === null;
      if (added) {
        while (a < added.length && (added[a] as number) < i) a++;
        isNew = added[a] === i;
      }
      if (isNew) checkPrefix(bytes, p, q, (checks as { family: 4 | 6 }).family);
      const at = o;
      for (let r = 0; r < ROUTE.length; r++) text[o++] = ROUTE[r] as number;
      for (let r = p; r < q; r++) text[o++] = bytes[r] as number;
      for (let r = 0; r < tail.length; r++) text[o++] = tail[r] as number;
      if (isNew && added) found.push(route, at, o);
      route++;
    }
  }
  flush();
  if (placeAt && placeN) {
    placeAt[chunks.length] = o;
    placeN[chunks.length] = route;
  }
  o += END.copy(text, o);
  if (o !== size) throw new Error(`a route file came out ${o} bytes, not the ${size} counted`);
  return { text, added: found, places: placeAt && placeN ? { at: placeAt, n: placeN } : null };
}

/**
 * The check text `bird -p` reads of a file written again: its routes left as empty lines but
 * the added ones (`added`, writeSet's triples), which the running file lacks (BIRD parsed the
 * others when it took it), so every other line stays where it is.
 */
export function checkText(text: Buffer, headLength: number, routes: number, added: number[]): Buffer {
  let size = headLength + routes + END.length;
  for (let m = 0; m < added.length; m += 3) size += (added[m + 2] as number) - (added[m + 1] as number) - 1;
  const check = Buffer.allocUnsafe(size);
  text.copy(check, 0, 0, headLength);
  check.fill(0x0a, headLength, size - END.length);
  let o = headLength;
  let route = 0;
  for (let m = 0; m < added.length; m += 3) {
    o += (added[m] as number) - route;
    o += text.copy(check, o, added[m + 1] as number, added[m + 2] as number);
    route = (added[m] as number) + 1;
  }
  END.copy(check, size - END.length);
  return check;
}

/** The prefix `bytes[from, to)` is one the render takes as it is written; throws otherwise. */
export function checkPrefix(bytes: Buffer, from: number, to: number, family: 4 | 6): void {
  if (family === 4 && isPlainV4Prefix(bytes, from, to)) return;
  const text = bytes.toString("latin1", from, to);
  // Throws as the render of the payload does; another spelling is the payload render's to write.
  if (prefix(text, family, `prefixes.v${family}`) !== text) throw new RenderError(`prefixes.v${family}`, `${text} is written otherwise`);
}
