import type { TaggedPrefix } from "./aggregate-tagged.js";
import { familyOf, HOST_BITS_CLEARED, parseIPv4PrefixFast, parsePrefixInto } from "./cidr.js";
import { sortCommunities } from "./communities.js";
import { PrefixError } from "./errors.js";

/** A prefix in both lists whose communities differ. */
export interface CommunityChange {
  prefix: string;
  from_communities: string[];
  to_communities: string[];
}

/** What changed from one tagged list to another (the revision diff route's answer). */
export interface TaggedDiff {
  /** In `to` only (the items of `to` themselves). */
  added: TaggedPrefix[];
  /** In `from` only (the items of `from` themselves). */
  removed: TaggedPrefix[];
  changed: CommunityChange[];
}

/**
 * Walks one sorted list, holding the parsed key of the current item (family, four words,
 * length) and checking that each key is greater than the one before.
 */
class SortedCursor {
  index = -1;
  family = 0;
  len = 0;
  readonly words = new Uint32Array(4);
  private readonly parsed = new Uint32Array(4);

  constructor(
    private readonly items: readonly TaggedPrefix[],
    private readonly name: string,
  ) {
    this.next();
  }

  get done(): boolean {
    return this.index >= this.items.length;
  }

  get item(): TaggedPrefix {
    return this.items[this.index]!;
  }

  next(): void {
    this.index++;
    if (this.done) return;
    const text = this.item.prefix;
    const p = this.parsed;
    let family: 4 | 6 = 4;
    let result: number | string = parseIPv4PrefixFast(text, p, 3);
    if (result < 0) {
      family = familyOf(text);
      result = family === 4 ? parsePrefixInto(text, 4, p, 3) : parsePrefixInto(text, 6, p, 0);
      if (typeof result === "string") throw new PrefixError("invalid_address", text, `${this.name}: ${result}`);
    }
    if (family === 4) p[0] = p[1] = p[2] = 0;
    const len = result >= HOST_BITS_CLEARED ? result - HOST_BITS_CLEARED : result;
    if (this.index > 0 && compareKeys(family, p, len, this.family, this.words, this.len) <= 0) {
      throw new PrefixError("not_sorted", text, `${this.name} is not sorted by family, address and length at ${text}`);
    }
    this.family = family;
    this.len = len;
    this.words.set(p);
  }
}

function compareKeys(fa: number, wa: Uint32Array, la: number, fb: number, wb: Uint32Array, lb: number): number {
  if (fa !== fb) return fa - fb;
  for (let w = 0; w < 4; w++) if (wa[w] !== wb[w]) return wa[w]! < wb[w]! ? -1 : 1;
  return la - lb;
}

function sameCommunities(a: readonly string[], b: readonly string[]): boolean {
  if (a.length === b.length && a.every((c, k) => c === b[k])) return true;
  const x = sortCommunities(a);
  const y = sortCommunities(b);
  return x.length === y.length && x.every((c, k) => c === y[k]);
}

/**
 * The difference between two tagged lists, each sorted as aggregateTagged returns them
 * (IPv4 then IPv6, by address then length, no prefix twice), in one linear walk. Communities
 * compare as sets. A list that is out of order throws PrefixError (`not_sorted`).
 */
export function diffTagged(from: readonly TaggedPrefix[], to: readonly TaggedPrefix[]): TaggedDiff {
  const diff: TaggedDiff = { added: [], removed: [], changed: [] };
  const a = new SortedCursor(from, "the first list");
  const b = new SortedCursor(to, "the second list");
  while (!a.done && !b.done) {
    const order = compareKeys(a.family, a.words, a.len, b.family, b.words, b.len);
    if (order < 0) {
      diff.removed.push(a.item);
      a.next();
    } else if (order > 0) {
      diff.added.push(b.item);
      b.next();
    } else {
      if (!sameCommunities(a.item.communities, b.item.communities)) {
        diff.changed.push({
          prefix: b.item.prefix,
          from_communities: sortCommunities(a.item.communities),
          to_communities: sortCommunities(b.item.communities),
        });
      }
      a.next();
      b.next();
    }
  }
  for (; !a.done; a.next()) diff.removed.push(a.item);
  for (; !b.done; b.next()) diff.added.push(b.item);
  return diff;
}

/**
 * Keeps the hidden class of SortedCursor alive between calls (see PREFIX_LIST_ANCHOR in
 * prefix-list.ts): without it a full GC between two calls frees it and deoptimises
 * diffTagged, which then runs unoptimised for most of the next call (500k against 505k
 * tagged prefixes with a gc() before each call: 124 ms without it, 104 ms with it; 82 ms
 * without the gc(), the rest being the collector's sweeping after it).
 */
export const SORTED_CURSOR_ANCHOR: unknown = new SortedCursor([], "");
