import {
  compareWords,
  isSorted,
  lastAddress,
  type PrefixTable,
  parseJoinedIPv4,
  parsePrefixList,
  parsePrefixTexts,
  prefixText,
  sortedPairs,
  type TaggedPrefix,
  tableOf,
} from "@rlc/shared/prefix";

/** A distinct (communities, modules) pair that announced prefixes refer to by index. */
export interface RevisionTag {
  /** Sorted (compareCommunities), shared by every tag with the same communities. */
  communities: string[];
  /** Indexes into RevisionContent.modules, ascending. */
  modules: number[];
}

/** One announced prefix as a tuple: `[prefix, communities, module_ids]`. */
export type RevisionEntry = [string, string[], string[]];

/**
 * One family's announced prefixes, sorted by address then length, and the tag of each:
 * columnar, so a million prefixes are one typed table (or one string array) and one typed array.
 * `prefixAt`, `at` and `map` give a prefix's text and tuples for readers that want them (the
 * bundle builder, the prefixes route).
 *
 * A family holds its prefixes' texts, its parsed table, or both. A content kept in memory
 * between refreshes (the revision store, the builder's last build) is made compact: its texts
 * are let go where it has its table, and a text is written from the table when asked. In the
 * controller of a 1.2M-prefix tenant the texts of the contents it kept were ~5M strings
 * (~150 MiB of the heap's ~400 MiB, a heap snapshot), which every collection walked and every
 * incremental refresh paid for in the marking its allocations drove; a table is a few typed
 * arrays the collector does not walk.
 */
export class RevisionFamily {
  private entryParts: { communities: string[]; moduleIds: string[] }[] | null = null;
  #texts: string[] | null;
  #table: PrefixTable | null;
  /** A decoded family's prefixes as stored: one text, joined by spaces (fromJoined). */
  #joined: string | null = null;
  /** Where each prefix of `#joined` starts (one more: the text's length and a space), found when first asked for. */
  #offsets: Uint32Array | null = null;
  #family: 4 | 6 = 4;

  constructor(
    texts: string[] | null,
    readonly tags: Uint32Array,
    private readonly owner: { modules: string[]; tags: RevisionTag[] },
    /**
     * The same prefixes parsed, when the builder has them: the stored form's text is written
     * from them (revision-encoding.ts), as reading a million strings scattered in memory to join
     * them takes ~0.4 s.
     */
    table: PrefixTable | null = null,
  ) {
    if (texts === null && table === null) throw new TypeError("a revision family needs its texts or its table");
    this.#texts = texts;
    this.#table = table;
  }

  /**
   * A family read back from its stored form: its prefixes kept as the one text they were stored
   * as (compact, no string a prefix), a prefix's text cut from it when asked for, and parsed
   * into its table only when something needs the table (an alignment by words, the encoder).
   * Decoding a million prefixes this way skips the split into a million strings and their parse
   * (~0.15 s of a cold diff's decode), which a diff from a stored change never needs.
   */
  static fromJoined(joined: string, family: 4 | 6, tags: Uint32Array, owner: { modules: string[]; tags: RevisionTag[] }): RevisionFamily {
    const f = new RevisionFamily([], tags, owner);
    f.#texts = null;
    f.#joined = joined;
    f.#family = family;
    return f;
  }

  get length(): number {
    return this.tags.length;
  }

  /** The prefixes parsed (null: a family of texts alone, which a hand-made content is). */
  get table(): PrefixTable | null {
    if (!this.#table && this.#joined !== null && this.#family === 4) this.#table = parseJoinedIPv4(this.#joined, this.length);
    if (!this.#table && this.#joined !== null) {
      const texts = this.texts();
      const list = parsePrefixList(texts)[this.#family === 4 ? "v4" : "v6"];
      if (list.count !== texts.length) throw new Error(`a stored revision family holds prefixes of another family than IPv${this.#family}`);
      this.#table = tableOf(list);
    }
    return this.#table;
  }

  /** Prefix i's canonical text. */
  prefixAt(i: number): string {
    if (this.#texts) return this.#texts[i]!;
    if (this.#joined !== null) {
      const at = this.offsets();
      return this.#joined.slice(at[i]!, at[i + 1]! - 1);
    }
    return prefixText(this.#table!, i);
  }

  private offsets(): Uint32Array {
    if (!this.#offsets) {
      const joined = this.#joined!;
      const n = this.length;
      const at = new Uint32Array(n + 1);
      let p = 0;
      for (let i = 0; i < n; i++) {
        at[i] = p;
        const space = joined.indexOf(" ", p);
        p = space < 0 ? joined.length + 1 : space + 1;
      }
      at[n] = joined.length + 1;
      this.#offsets = at;
    }
    return this.#offsets;
  }

  /**
   * Every prefix's text, in order: the family's own array while it holds one (not to be
   * changed), else written anew (not kept: a compact family stays compact).
   */
  texts(): string[] {
    if (this.#texts) return this.#texts;
    if (this.#joined !== null) return this.#joined === "" ? [] : this.#joined.split(" ");
    const t = this.#table!;
    const out = new Array<string>(t.count);
    for (let i = 0; i < t.count; i++) out[i] = prefixText(t, i);
    return out;
  }

  /** Whether it holds a string a prefix (a compact family does not). */
  get hasTexts(): boolean {
    return this.#texts !== null;
  }

  /** Lets the texts go where the table stands for them (what it answers is unchanged). */
  compact(): void {
    if (this.#table) this.#texts = null;
  }

  /** The tag of prefix i. */
  tagAt(i: number): RevisionTag {
    return this.owner.tags[this.tags[i]!]!;
  }

  at(i: number): RevisionEntry {
    // Module ids resolved once a tag, so a million tuples share a handful of arrays.
    this.entryParts ??= this.owner.tags.map((t) => ({ communities: t.communities, moduleIds: t.modules.map((m) => this.owner.modules[m]!) }));
    const part = this.entryParts[this.tags[i]!]!;
    return [this.prefixAt(i), part.communities, part.moduleIds];
  }

  map<T>(fn: (entry: RevisionEntry, index: number) => T): T[] {
    const n = this.length;
    const out = new Array<T>(n);
    for (let i = 0; i < n; i++) out[i] = fn(this.at(i), i);
    return out;
  }
}

/** Lets go of the texts of both families where their tables stand for them (RevisionFamily.compact). */
export function compactContent(content: RevisionContent): RevisionContent {
  content.v4.compact();
  content.v6.compact();
  return content;
}

/** A revision's content: each module id is written once, not 36 characters on every prefix. */
export interface RevisionContent {
  /** Module ids, ascending; tags refer to them by index. */
  modules: string[];
  tags: RevisionTag[];
  v4: RevisionFamily;
  v6: RevisionFamily;
}

/** Content from tuple lists (each sorted by address): tests, and callers that build by hand. */
export function contentFromEntries(v4: readonly RevisionEntry[], v6: readonly RevisionEntry[]): RevisionContent {
  const modules = [...new Set([...v4, ...v6].flatMap((e) => e[2]))].sort();
  const moduleIndex = new Map(modules.map((m, i) => [m, i]));
  const tags: RevisionTag[] = [];
  const tagIndex = new Map<string, number>();
  const owner = { modules, tags };
  const family = (list: readonly RevisionEntry[]) => {
    const tagOf = new Uint32Array(list.length);
    list.forEach(([, communities, ids], i) => {
      const mods = ids.map((id) => moduleIndex.get(id)!).sort((a, b) => a - b);
      const key = `${communities.join(",")}|${mods.join(",")}`;
      let t = tagIndex.get(key);
      if (t === undefined) tagIndex.set(key, (t = tags.push({ communities: [...communities], modules: mods }) - 1));
      tagOf[i] = t;
    });
    return new RevisionFamily(
      list.map((e) => e[0]),
      tagOf,
      owner,
    );
  };
  return { modules, tags, v4: family(v4), v6: family(v6) };
}

export const prefixCount = (c: RevisionContent) => c.v4.length + c.v6.length;

/** `{prefix, communities}` of every announced prefix, IPv4 first (the diff's input). */
export function taggedPrefixes(content: RevisionContent): TaggedPrefix[] {
  const out: TaggedPrefix[] = [];
  for (const f of [content.v4, content.v6]) {
    const { tags } = f;
    const prefixes = f.texts();
    for (let i = 0; i < prefixes.length; i++) out.push({ prefix: prefixes[i]!, communities: content.tags[tags[i]!]!.communities });
  }
  return out;
}

const sortedTable = (t: PrefixTable) => (isSorted(t) ? t : sortedPairs(t, new Uint32Array(t.count), 1).table);

/** How many prefixes of `current` no prefix of `next` contains (both of one family). */
export function uncovered(current: PrefixTable, next: PrefixTable): number {
  const W = current.W;
  const a = sortedTable(current);
  const b = sortedTable(next);
  const farthest = new Uint32Array(W); // the greatest last address of the b prefixes seen so far
  const last = new Uint32Array(W);
  let seen = false;
  let j = 0;
  let count = 0;
  for (let i = 0; i < a.count; i++) {
    // Every b prefix that starts at or before a's: one of them contains a iff it ends at or after a's end.
    for (; j < b.count && compareWords(b.words, j * W, a.words, i * W, W) <= 0; j++) {
      lastAddress(b.words, j * W, b.lens[j]!, W, last);
      if (!seen || compareWords(last, 0, farthest, 0, W) > 0) farthest.set(last);
      seen = true;
    }
    lastAddress(a.words, i * W, a.lens[i]!, W, last);
    if (!seen || compareWords(farthest, 0, last, 0, W) < 0) count++;
  }
  return count;
}

/**
 * How many of `current`'s prefixes `next` does not cover whole (the guard): a prefix counts
 * as kept when some prefix of `next` contains it. One merge walk over the sorted lists.
 */
export function withdrawnCount(current: RevisionContent, next: RevisionContent): number {
  const a = parsePrefixTexts([...current.v4.texts(), ...current.v6.texts()]);
  const b = parsePrefixTexts([...next.v4.texts(), ...next.v6.texts()]);
  return uncovered(a.v4, b.v4) + uncovered(a.v6, b.v6);
}
