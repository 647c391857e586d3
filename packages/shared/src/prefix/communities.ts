/**
 * Order of community strings: standard (`65000:100`) before large (`65000:1:2`), then by each
 * number in turn (`65000:20` before `65000:100`); text that is not numeric sorts after, by its
 * characters.
 */
export function compareCommunities(a: string, b: string): number {
  if (a === b) return 0;
  const pa = numericParts(a);
  const pb = numericParts(b);
  if (pa === null || pb === null) {
    if (pa !== pb) return pa === null ? 1 : -1;
    return a < b ? -1 : 1;
  }
  if (pa.length !== pb.length) return pa.length - pb.length;
  for (let k = 0; k < pa.length; k++) if (pa[k] !== pb[k]) return pa[k]! - pb[k]!;
  return a < b ? -1 : 1; // same numbers, different text (leading zeros)
}

function numericParts(text: string): number[] | null {
  const parts = text.split(":");
  const out: number[] = [];
  for (const part of parts) {
    if (!/^[0-9]{1,10}$/.test(part)) return null;
    out.push(Number(part));
  }
  return out;
}

/** Sorted (compareCommunities), duplicates removed. */
export function sortCommunities(communities: readonly string[]): string[] {
  const sorted = [...communities].sort(compareCommunities);
  return sorted.filter((c, k) => k === 0 || c !== sorted[k - 1]);
}

/**
 * Interned community sets, so that sets compare by a number and unions are computed once per
 * pair of sets rather than once per prefix. Set 0 is the empty set. One instance per
 * computation; it only grows.
 */
export class CommunitySets {
  private readonly lists: (readonly string[])[] = [Object.freeze([])];
  private readonly byKey = new Map<string, number>([["", 0]]);
  private readonly unions = new Map<number, number>();

  /** The id of the set of `communities`. */
  intern(communities: readonly string[]): number {
    const sorted = sortCommunities(communities);
    const key = sorted.join("\n");
    let id = this.byKey.get(key);
    if (id === undefined) {
      id = this.lists.length;
      this.lists.push(Object.freeze(sorted));
      this.byKey.set(key, id);
    }
    return id;
  }

  /** The id of the union of sets a and b. */
  union(a: number, b: number): number {
    if (a === b || b === 0) return a;
    if (a === 0) return b;
    const key = a < b ? a * 2 ** 26 + b : b * 2 ** 26 + a;
    let id = this.unions.get(key);
    if (id === undefined) {
      id = this.intern([...this.lists[a]!, ...this.lists[b]!]);
      this.unions.set(key, id);
    }
    return id;
  }

  /** The sorted communities of set `id`: one frozen array per set, shared by all who ask. */
  list(id: number): readonly string[] {
    return this.lists[id]!;
  }

  /** How many sets there are (ids 0 .. size - 1). */
  get size(): number {
    return this.lists.length;
  }
}

/**
 * Keeps the hidden class of CommunitySets alive between calls (see PREFIX_LIST_ANCHOR in
 * prefix-list.ts): without it a full GC between two aggregateTagged calls deoptimises the
 * functions that call its methods.
 */
export const COMMUNITY_SETS_ANCHOR: CommunitySets = new CommunitySets();
