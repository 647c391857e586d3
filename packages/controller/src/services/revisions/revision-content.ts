import { createHash } from "node:crypto";
import { compareWords, isSorted, lastAddress, type PrefixTable, parsePrefixTexts, sortedPairs, type TaggedPrefix } from "@rlc/shared/prefix";

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
 * columnar, so a million prefixes are one string array and one typed array. `map` and `at`
 * give tuples for readers that want them (the bundle builder, the prefixes route).
 */
export class RevisionFamily {
  private entryParts: { communities: string[]; moduleIds: string[] }[] | null = null;

  constructor(
    readonly prefixes: string[],
    readonly tags: Uint32Array,
    private readonly owner: { modules: string[]; tags: RevisionTag[] },
    /**
     * The same prefixes parsed, when the builder has them (a decoded content has not): the
     * stored form's text is written from them (revision-store.ts), as reading a million
     * strings scattered in memory to join them takes ~0.4 s.
     */
    readonly table: PrefixTable | null = null,
  ) {}

  get length(): number {
    return this.prefixes.length;
  }

  /** The tag of prefix i. */
  tagAt(i: number): RevisionTag {
    return this.owner.tags[this.tags[i]!]!;
  }

  at(i: number): RevisionEntry {
    // Module ids resolved once a tag, so a million tuples share a handful of arrays.
    this.entryParts ??= this.owner.tags.map((t) => ({ communities: t.communities, moduleIds: t.modules.map((m) => this.owner.modules[m]!) }));
    const part = this.entryParts[this.tags[i]!]!;
    return [this.prefixes[i]!, part.communities, part.moduleIds];
  }

  map<T>(fn: (entry: RevisionEntry, index: number) => T): T[] {
    const out = new Array<T>(this.prefixes.length);
    for (let i = 0; i < this.prefixes.length; i++) out[i] = fn(this.at(i), i);
    return out;
  }
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

export const prefixCount = (c: RevisionContent) => c.v4.prefixes.length + c.v6.prefixes.length;

/** The digest covers what routers receive (prefix and communities), not the attribution. */
export function digestOf(content: RevisionContent): string {
  const h = createHash("sha256");
  const joined = content.tags.map((t) => t.communities.join(","));
  for (const { prefixes, tags } of [content.v4, content.v6]) {
    // Hashing in ~64 kB pieces: one update call a prefix costs ~3x more.
    let chunk = "";
    for (let i = 0; i < prefixes.length; i++) {
      chunk += `${prefixes[i]} ${joined[tags[i]!]}\n`;
      if (chunk.length > 65_536) {
        h.update(chunk);
        chunk = "";
      }
    }
    h.update(chunk);
  }
  return `sha256:${h.digest("hex")}`;
}

/** `{prefix, communities}` of every announced prefix, IPv4 first (the diff's input). */
export function taggedPrefixes(content: RevisionContent): TaggedPrefix[] {
  const out: TaggedPrefix[] = [];
  for (const { prefixes, tags } of [content.v4, content.v6]) {
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
  const a = parsePrefixTexts([...current.v4.prefixes, ...current.v6.prefixes]);
  const b = parsePrefixTexts([...next.v4.prefixes, ...next.v6.prefixes]);
  return uncovered(a.v4, b.v4) + uncovered(a.v6, b.v6);
}
