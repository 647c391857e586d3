import type { ChunkedSection, SectionChunk } from "../../bundle/chunked-section.js";
import type { SectionTags } from "../../bundle/tagged-section.js";
import type { FileText, MadeText } from "../atomic-file.js";
import { END_TEXT, type Tally } from "./set-routes.js";
import type { Community } from "./values.js";

// What a section render keeps from one apply to the next (section-statics.ts): each community
// set's route file as last written (its text, made again on demand, and where its routes are
// chunk by chunk), the section it was rendered from and that section's chunks' tallies.

/**
 * The bytes of a route file the last render wrote, as the file in the config directory holds
 * them: null unless the caller knows the file holds `text` as it was written (the agent's
 * WrittenFiles reads it back then). A set written again takes the routes it kept from them.
 */
export type ReadWritten = (name: string, text: FileText) => Buffer | null;

export interface SetOf {
  /** `<family> <communities, parsed and sorted>`. */
  id: string;
  family: 4 | 6;
  key: string;
  set: Community[];
}

export interface RenderedSet {
  of: SetOf;
  name: string;
  file: string;
  head: string;
  /** The file's text: the same object for as long as the set's routes do not change. */
  text: RouteText;
  /** Where its routes are in the file, chunk by chunk of the section it was written from (writeSet's `places`): while that section is the last render's, a delta's render of the set takes them as they are. */
  places: Places | null;
}

/** A route file's routes chunk by chunk: `at[c]`, where those of chunk c start (`at[chunks]`, where they end); `n[c]`, how many come before. */
export interface Places {
  section: ChunkedSection;
  at: Uint32Array;
  n: Uint32Array;
}

/**
 * A route file's text as the cache keeps it: its bytes until they are written
 * ({@link SectionStaticsCache.settle}), then made again from the section of the latest render
 * while the set is unchanged there (a file found touched, a restore), and not at all once a render
 * wrote it again. A million routes' files are ~40 MB the agent then does not hold; what tells a
 * file from its next version is this object's identity.
 */
export class RouteText implements MadeText {
  #bytes: Buffer | null;
  #make: (() => Buffer) | null = null;
  readonly #head: string;
  readonly #routes: number;

  constructor(bytes: Buffer, head: string, routes: number) {
    this.#bytes = bytes;
    this.#head = head;
    this.#routes = routes;
  }

  bytes(): Buffer | null {
    return this.#bytes ?? this.#make?.() ?? null;
  }

  /** Its head and end: the validate step blanks its route lines without the text's bytes (every route line plain ASCII). */
  frame(): { text: Buffer; routesAfterLine: number; routes: number } {
    let lines = 1;
    for (let i = this.#head.indexOf("\n"); i >= 0; i = this.#head.indexOf("\n", i + 1)) lines++;
    return { text: Buffer.from(`${this.#head}${END_TEXT}`, "utf8"), routesAfterLine: lines, routes: this.#routes };
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
  /** The section the files were rendered from, and its chunks' tallies: where each file's routes are, chunk by chunk. */
  section: ChunkedSection | null = null;
  sectionTallies: Tally[] = [];
  /** Tag → its community set. */
  setOfTag: (SetOf | undefined)[] = [];
  sets = new Map<string, RenderedSet>();
  /** Each chunk's lines by tag: after a delta only the rebuilt chunks are counted. */
  tallies = new WeakMap<SectionChunk, Tally>();
  /** Renders so far: what marks the chunks of the last render's section (Tally.stamp). */
  stamp = 0;
  /** Where a set written again reads its last file back from; without it, the set is written whole. */
  readonly readWritten: ReadWritten | null;

  constructor(readWritten: ReadWritten | null = null) {
    this.readWritten = readWritten;
  }

  /** The files of the last render are written (or given up): their bytes let go, made again when asked. */
  settle(): void {
    for (const s of this.sets.values()) s.text.settle();
  }

  clear(): void {
    for (const s of this.sets.values()) s.text.remake(null);
    this.context = "";
    this.tags = null;
    this.sha256 = null;
    this.section = null;
    this.sectionTallies = [];
    this.setOfTag = [];
    this.sets.clear();
    this.tallies = new WeakMap();
  }
}
