import type { ChunkedChange, ChunkedSection, SectionChunk } from "../../bundle/chunked-section.js";
import type { SectionTags } from "../../bundle/tagged-section.js";
import type { FileText, MadeText } from "../atomic-file.js";
import { compareSets, groupHead, type StaticsOut, staticFileName, uniqueSorted } from "./statics.js";
import { type Community, communityText, isPlainV4Prefix, community as parseCommunity, prefix, quoted, RenderError } from "./values.js";

// The static protocols of a split render written from a chunked section (../../bundle/chunked-
// section.ts) rather than from the payload's prefix tuples: each community set's file made from
// the section's bytes, and after a delta only the files of the sets it touched, so an agent's
// apply costs what changed. Byte for byte what renderStatics writes for the same prefixes (a
// property test holds the two together); anything it does not take as it is (a prefix in
// another spelling, a bad community) throws, and the caller renders the payload as before.

/** What the agent renders from: a section, and when it came from a delta, what the delta did. */
export interface SectionInput {
  section: ChunkedSection;
  /** SHA-256 of the section's bytes. */
  sha256: string;
  /** The delta that made `section` from the section with SHA-256 `baseSha256`; null for a whole section. */
  delta: (Omit<ChunkedChange, "section"> & { baseSha256: string }) | null;
}

/** A route file's text for `bird -p`: the new text with the routes of `against` (the file it replaces, as rendered last time: told by identity) left blank. */
export interface CheckText {
  against: FileText;
  text: Buffer;
}

interface SetOf {
  /** `<family> <communities, parsed and sorted>`. */
  id: string;
  family: 4 | 6;
  key: string;
  set: Community[];
}

interface RenderedSet {
  of: SetOf;
  name: string;
  file: string;
  head: string;
  /** The file's text: the same object for as long as the set's routes do not change. */
  text: RouteText;
}

/**
 * A route file's text as the cache keeps it: its bytes until they are written
 * ({@link SectionStaticsCache.settle}), then made again from the section of the latest render
 * while the set is unchanged there (a file found touched, a restore), and not at all once a render
 * wrote it again. A million routes' files are ~40 MB the agent then does not hold; what tells a
 * file from its next version is this object's identity.
 */
class RouteText implements MadeText {
  #bytes: Buffer | null;
  #make: (() => Buffer) | null = null;

  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }

  bytes(): Buffer | null {
    return this.#bytes ?? this.#make?.() ?? null;
  }

  /** Made by `make` from now on, once its bytes are let go (null: not any more). */
  remake(make: (() => Buffer) | null): void {
    this.#make = make;
    if (!make) this.#bytes = null;
  }

  /** Its bytes let go: made again when asked. */
  settle(): void {
    this.#bytes = null;
  }
}

/** The last render's files, per config path: a delta over the section they were made from renders only the sets it touched. */
export class SectionStaticsCache {
  /** Route kind, titles and include name the files were written under; another renders all again. */
  context = "";
  /** The numbering the tags below come from. */
  tags: SectionTags | null = null;
  /** SHA-256 of the section the files were rendered from. */
  sha256: string | null = null;
  /** Tag → its community set. */
  setOfTag: (SetOf | undefined)[] = [];
  sets = new Map<string, RenderedSet>();

  /** The files of the last render are written (or given up): their bytes let go, made again when asked. */
  settle(): void {
    for (const s of this.sets.values()) s.text.settle();
  }

  clear(): void {
    for (const s of this.sets.values()) s.text.remake(null);
    this.context = "";
    this.tags = null;
    this.sha256 = null;
    this.setOfTag = [];
    this.sets.clear();
  }
}

const ROUTE = Buffer.from("\n  route ", "latin1");
const END = Buffer.from("\n}\n", "latin1");

/**
 * Both families' static protocols into `out` (split: `out.split` names the include), from
 * `input`; answers the check texts of the sets a delta changed. Throws for anything the render
 * of the payload would refuse or spell otherwise; the cache is then cleared.
 */
export function renderSectionStatics(
  out: StaticsOut,
  input: SectionInput,
  kind: string,
  titles: Map<string, string>,
  cache: SectionStaticsCache,
): Record<string, CheckText> {
  if (out.split === null) throw new TypeError("a section render writes split statics");
  try {
    return render(out as StaticsOut & { split: string }, input, kind, titles, cache);
  } catch (error) {
    cache.clear();
    throw error;
  }
}

function render(out: StaticsOut & { split: string }, input: SectionInput, kind: string, titles: Map<string, string>, cache: SectionStaticsCache) {
  const { section, delta } = input;
  const context = JSON.stringify([kind, out.split, [...titles]]);
  // The last render's files are written by now (or were refused): made from this section from
  // here on while their set is unchanged (below), else no more.
  for (const s of cache.sets.values()) s.text.remake(null);
  if (cache.context !== context || cache.tags !== section.tags) {
    cache.clear();
    cache.context = context;
    cache.tags = section.tags;
  }
  const setOf = (tag: number): SetOf => {
    let of = cache.setOfTag[tag];
    if (!of) cache.setOfTag[tag] = of = parseSet(section.tags, tag);
    return of;
  };
  const incremental = delta !== null && cache.sha256 === delta.baseSha256;
  // The sets to write again, each with its lines in the section's order.
  const redo = new Map<string, SetOf>();
  if (incremental) for (const tag of delta.changedTags) redo.set(setOf(tag).id, setOf(tag));
  const tagCount = section.tags.texts.length;
  const slot = new Int32Array(tagCount).fill(-1);
  const chosen: SetOf[] = [];
  const index = new Map<string, number>();
  for (let tag = 0; tag < tagCount; tag++) {
    if (incremental && !delta.changedTags.has(tag) && !redo.has(cache.setOfTag[tag]?.id ?? "")) continue;
    const of = setOf(tag);
    let k = index.get(of.id);
    if (k === undefined) index.set(of.id, (k = chosen.push(of) - 1));
    slot[tag] = k;
  }
  const lines = linesOfSets(section, slot, chosen.length);

  // A kept line was checked when its set was last written; only the added ones are new.
  const isAdded = incremental ? new Uint8Array(section.count) : null;
  if (isAdded && delta) for (const i of delta.added) isAdded[i] = 1;
  const sets = new Map<string, RenderedSet>(incremental ? cache.sets : []);
  const checks: Record<string, CheckText> = {};
  chosen.forEach((of, k) => {
    const mine = lines[k] as Uint32Array;
    sets.delete(of.id);
    if (mine.length === 0) return;
    const line = new LineCursor(section);
    for (const i of mine) if (!isAdded || isAdded[i]) checkPrefix(line.at(i), of.family);
    const { name, head } = groupHead(of, of.family, mine.length, titles);
    const made: RenderedSet = { of, name, file: staticFileName(out.split, name), head, text: new RouteText(writeRoutes(section, mine, head, kind, null)) };
    const before = incremental ? cache.sets.get(of.id) : undefined;
    if (before && isAdded) checks[made.file] = { against: before.text, text: writeRoutes(section, mine, head, kind, isAdded) };
    sets.set(of.id, made);
  });
  // Every file as this section makes it, once its bytes are let go.
  const { setOfTag } = cache;
  for (const s of sets.values()) s.text.remake(() => remade(section, s, setOfTag, kind));

  const names = new Set<string>();
  for (const family of [4, 6] as const) {
    const mine = [...sets.values()].filter((s) => s.of.family === family).sort((a, b) => compareSets(a.of.set, b.of.set));
    for (const s of mine) {
      if (names.has(s.name)) throw new RenderError(`prefixes.v${family}`, `two community sets hash to ${s.name}`);
      names.add(s.name);
      out.files[s.file] = s.text;
      out.lines.push(`include ${quoted(s.file, "statics")};`);
    }
  }
  cache.sets = sets;
  cache.sha256 = input.sha256;
  return checks;
}

/** Tag `tag`'s community set; throws RenderError for a community the render refuses. */
function parseSet(tags: SectionTags, tag: number): SetOf {
  const text = tags.texts[tag] as string;
  const family = tags.v6[tag] ? 6 : 4;
  const communities = text === "" ? [] : text.split(",");
  const set = uniqueSorted(communities.map((c, j) => parseCommunity(c, `prefixes.v${family}[][1][${j}]`)));
  const key = set.map(communityText).join(",");
  return { id: `${family} ${key}`, family, key, set };
}

/** For each chosen set (`slot[tag]`, -1: not chosen), its lines in the section's order: one pass over the tags. */
function linesOfSets(section: ChunkedSection, slot: Int32Array, sets: number): Uint32Array[] {
  const { chunks, first } = section;
  // Counted first, then written: one array a set, no array grown a line.
  const counts = new Uint32Array(sets);
  for (let k = 0; k < chunks.length; k++) {
    const { tagOf, count } = chunks[k] as SectionChunk;
    for (let j = 0; j < count; j++) {
      const set = slot[tagOf[j] as number] as number;
      if (set >= 0) counts[set] = (counts[set] as number) + 1;
    }
  }
  const lines = Array.from(counts, (n) => new Uint32Array(n));
  const at = new Uint32Array(sets);
  for (let k = 0; k < chunks.length; k++) {
    const { tagOf, count } = chunks[k] as SectionChunk;
    const base = first[k] as number;
    for (let j = 0; j < count; j++) {
      const set = slot[tagOf[j] as number] as number;
      if (set < 0) continue;
      (lines[set] as Uint32Array)[at[set] as number] = base + j;
      at[set] = (at[set] as number) + 1;
    }
  }
  return lines;
}

/** Line i's chunk and prefix, for lines asked in ascending order (each step forward finds its chunk from the last one). */
class LineCursor {
  readonly #section: ChunkedSection;
  #k = 0;
  chunk: SectionChunk | null = null;
  /** The prefix's bytes: `chunk.bytes[from, to)`. */
  from = 0;
  to = 0;

  constructor(section: ChunkedSection) {
    this.#section = section;
  }

  at(i: number): this {
    const { first, chunks } = this.#section;
    if (i < (first[this.#k] as number)) this.#k = 0;
    while ((first[this.#k + 1] as number) <= i) this.#k++;
    const c = chunks[this.#k] as SectionChunk;
    const j = i - (first[this.#k] as number);
    this.chunk = c;
    this.from = c.starts[j] as number;
    this.to = this.from + (c.prefixLength[j] as number);
    return this;
  }
}

/** Set `s`'s file as `section` makes it (a set its last render did not write again: the same bytes). */
function remade(section: ChunkedSection, s: RenderedSet, setOfTag: readonly (SetOf | undefined)[], kind: string): Buffer {
  const slot = new Int32Array(section.tags.texts.length).fill(-1);
  setOfTag.forEach((of, tag) => {
    if (of?.id === s.of.id) slot[tag] = 0;
  });
  return writeRoutes(section, linesOfSets(section, slot, 1)[0] as Uint32Array, s.head, kind, null);
}

/** The line's prefix is one the render takes as it is written; throws otherwise. */
function checkPrefix(line: LineCursor, family: 4 | 6): void {
  const bytes = (line.chunk as SectionChunk).bytes;
  if (family === 4 && isPlainV4Prefix(bytes, line.from, line.to)) return;
  const text = bytes.toString("latin1", line.from, line.to);
  // Throws as the render of the payload does; another spelling is the payload render's to write.
  if (prefix(text, family, `prefixes.v${family}`) !== text) throw new RenderError(`prefixes.v${family}`, `${text} is written otherwise`);
}

/**
 * A set's file: its head, `\n  route <prefix> <kind>;` a line, `\n}\n`. With `added`, the check
 * text `bird -p` reads instead: the routes not added left as empty lines (the running file has
 * them, and BIRD parsed them when it took it), so every other line stays where it is.
 */
function writeRoutes(section: ChunkedSection, lines: Uint32Array, head: string, kind: string, added: Uint8Array | null): Buffer {
  const { chunks, first } = section;
  const headBytes = Buffer.from(head, "utf8");
  const tail = Buffer.from(` ${kind};`, "latin1");
  // Lines ascend: each one's chunk is found by stepping on from the last one's.
  let size = headBytes.length + END.length;
  let k = 0;
  for (let n = 0; n < lines.length; n++) {
    const i = lines[n] as number;
    if (added && !added[i]) {
      size++;
      continue;
    }
    while ((first[k + 1] as number) <= i) k++;
    size += ROUTE.length + ((chunks[k] as SectionChunk).prefixLength[i - (first[k] as number)] as number) + tail.length;
  }
  const text = Buffer.allocUnsafe(size);
  let o = headBytes.copy(text, 0);
  k = 0;
  let c = chunks[0] as SectionChunk;
  let from0 = 0;
  let end = first[1] as number;
  for (let n = 0; n < lines.length; n++) {
    const i = lines[n] as number;
    if (added && !added[i]) {
      text[o++] = 0x0a;
      continue;
    }
    if (i >= end) {
      while ((first[k + 1] as number) <= i) k++;
      c = chunks[k] as SectionChunk;
      from0 = first[k] as number;
      end = first[k + 1] as number;
    }
    for (let r = 0; r < ROUTE.length; r++) text[o++] = ROUTE[r] as number;
    const j = i - from0;
    const { bytes } = c;
    const from = c.starts[j] as number;
    const to = from + (c.prefixLength[j] as number);
    for (let r = from; r < to; r++) text[o++] = bytes[r] as number;
    for (let r = 0; r < tail.length; r++) text[o++] = tail[r] as number;
  }
  END.copy(text, o);
  return text;
}
