import type { Family } from "./address.js";
import { aggregateList } from "./aggregate.js";
import { CommunitySets } from "./communities.js";
import { formatPrefixList, PrefixList, parsePrefixList } from "./prefix-list.js";
import { PrefixTable } from "./prefix-table.js";
import { mergedOrder } from "./sort.js";
import { compareWords, containsWords, isLowerSibling } from "./words.js";

/** One module's collected prefixes and the communities it tags them with. */
export interface TaggedInput {
  readonly prefixes: readonly string[];
  readonly communities: readonly string[];
}

/** An announced prefix with its communities (sorted by compareCommunities, no duplicates). */
export interface TaggedPrefix {
  prefix: string;
  /**
   * From aggregateTagged, a frozen array shared by every prefix with the same communities
   * (half a million prefixes, a handful of arrays: measured 20% faster than an array each).
   */
  communities: string[];
}

/*
 * Community-aware aggregation of a revision's content.
 *
 * The procedure: (1) aggregate each module alone; (2) announce every prefix of any module's
 * result once, with the union of the communities of every module whose result covers it whole
 * (in a minimal cover, that is: contains it); (3) from the longest prefixes to the shortest,
 * until nothing changes, two sibling prefixes with equal communities become their parent (which
 * takes their communities if announced already), and a prefix whose communities equal those of
 * its nearest announced container is dropped.
 *
 * Invariants, which the property tests check against a brute-force model:
 * - the output covers exactly the union of the inputs' addresses;
 * - for every address, the communities of the longest output prefix containing it are the
 *   union of the communities of every input that contains it;
 * - no prefix is ever split: every output prefix is the union of announced prefixes of (2);
 * - the output is the fixpoint that (3) reaches going from the longest prefixes to the
 *   shortest, as the procedure orders it (the model in the test runs it literally);
 * - after (2) every prefix's communities include its container's, and (3) keeps that true.
 *
 * Why one pass suffices. Let the "inherited set" of a node be the communities of its nearest
 * announced container. Both rules of (3) keep the longest-match communities of every address,
 * and so the inherited set of every node that stays. A merge at length L only creates or
 * changes a node of length L-1, and a drop at L only removes a node of length L, so once the
 * nodes of length L have been handled, nothing later can make them mergeable or droppable.
 * Hence handling each node after its descendants (post-order) with the inherited set known
 * from the pre-order walk reaches the same fixpoint as repeated longest-to-shortest sweeps.
 *
 * The walk goes over all announced prefixes in address-then-length order (a container just
 * before its contents) keeping the chain of open containers. When a node closes (the walk
 * leaves its range): its children that carry its own communities are dropped, then it is
 * pushed onto its parent's list of finished children, merging with the finished child just
 * before it while the two are equal-community siblings; a merge that produces the parent
 * itself gives the parent those communities. No objects are made per prefix until the output.
 */
export function aggregateTagged(inputs: readonly TaggedInput[]): TaggedPrefix[] {
  const columns = aggregateTaggedColumns(inputs);
  const out: TaggedPrefix[] = [];
  for (const f of [columns.v4, columns.v6]) {
    // `out` sized once and filled by index, rather than grown by push to 627k items.
    let at = out.length;
    out.length = at + f.prefixes.length;
    for (let k = 0; k < f.prefixes.length; k++) out[at++] = { prefix: f.prefixes[k]!, communities: columns.communities[f.sets[k]!] as string[] };
  }
  return out;
}

/** One family of aggregateTaggedColumns: the announced prefixes in address order. */
export interface TaggedFamily {
  prefixes: string[];
  /** The same prefixes, parsed. */
  table: PrefixTable;
  /** The communities of prefix k: TaggedColumns.communities[sets[k]]. */
  sets: Int32Array;
}

export interface TaggedColumns {
  v4: TaggedFamily;
  v6: TaggedFamily;
  /** Communities by set, each a frozen array shared by every prefix with those communities. */
  communities: readonly (readonly string[])[];
}

/**
 * aggregateTagged as columns: the prefix texts, their words and lengths, and a community set
 * number per prefix. No object per prefix, and nothing to parse again: what the revision
 * builder works from.
 */
export function aggregateTaggedColumns(inputs: readonly TaggedInput[]): TaggedColumns {
  // Every module's texts in one array, so that an announced prefix can be given the text of
  // any module's input that is exactly its canonical text (PrefixList.source): text k of
  // module m is texts[offset of m + k]. One native concat: 4.5 ms for the bench's 806k texts,
  // against 6.6 ms copying them one by one.
  const texts = ([] as string[]).concat(...inputs.map((input) => (Array.isArray(input.prefixes) ? input.prefixes : Array.from(input.prefixes))));
  let offset = 0;
  const modules = inputs.map((input): TaggedLists => {
    const lists = parsePrefixList(input.prefixes);
    for (const list of [lists.v4, lists.v6]) {
      const src = list.src!;
      for (let k = 0; k < list.count; k++) if (src[k]! >= 0) src[k]! += offset;
      list.source = texts;
    }
    offset += input.prefixes.length;
    return { communities: input.communities, v4: lists.v4, v6: lists.v6 };
  });
  return aggregateTaggedLists(modules);
}

/** One module's prefixes parsed (any order, duplicates allowed), and its communities. */
export interface TaggedLists {
  readonly communities: readonly string[];
  readonly v4: PrefixList;
  readonly v6: PrefixList;
}

/**
 * aggregateTaggedColumns of modules parsed already (the revision builder parses each text
 * once, for its bogon filter and attribution too). Lists in order need no sort; those that
 * track their source texts (all the same array, or none) hand them to the announced prefixes.
 */
export function aggregateTaggedLists(inputs: readonly TaggedLists[]): TaggedColumns {
  const sets = new CommunitySets();
  const modules = inputs.map((input) => ({ set: sets.intern(input.communities), lists: input }));
  const out = {} as { v4: TaggedFamily; v6: TaggedFamily };
  for (const family of [4, 6] as const) {
    const results = modules.map((m) => ({ set: m.set, list: aggregateList(family === 4 ? m.lists.v4 : m.lists.v6) }));
    const all = new PrefixList(
      family,
      results.reduce((n, r) => n + r.list.count, 0),
    );
    const source = results.find((r) => r.list.source !== null)?.list.source ?? null;
    const src = source !== null ? all.trackSource(source) : null;
    const tags = new Int32Array(all.lens.length);
    const runs: number[] = [];
    for (const { set, list } of results) {
      runs.push(all.count);
      all.words.set(list.words.subarray(0, list.count * all.W), all.count * all.W);
      all.lens.set(list.lens.subarray(0, list.count), all.count);
      tags.fill(set, all.count, all.count + list.count);
      if (src !== null) {
        if (list.src !== null && list.source === source) src.set(list.src.subarray(0, list.count), all.count);
        else src.fill(-1, all.count, all.count + list.count);
      }
      all.count += list.count;
    }
    // Each module's result is in order: merging them is enough.
    out[family === 4 ? "v4" : "v6"] = announceAndReduce(family, all, mergedOrder(all, runs), tags, sets);
  }
  const communities: (readonly string[])[] = [];
  for (let id = 0; id < sets.size; id++) communities.push(sets.list(id));
  return { ...out, communities };
}

/**
 * Steps (2) and (3) for one family: `all` holds every module's aggregated prefixes, `order`
 * is their order by address then length, `tags` their sets.
 */
function announceAndReduce(family: Family, all: PrefixList, order: Int32Array, tags: Int32Array, sets: CommunitySets): TaggedFamily {
  const { words, lens, W } = all;
  const ann = new PrefixList(family, all.count); // announced prefixes, in walk order
  const inSrc = all.src;
  const src = inSrc !== null ? ann.trackSource(all.source!) : null;
  const set = new Int32Array(all.count);
  const alive = new Uint8Array(all.count);
  const chain = new Int32Array(130); // open containers (indexes into ann)
  const chainKids = new Int32Array(130); // where each one's finished children start in `kids`
  let depth = 0;
  const kids = new Int32Array(all.count + 1);
  let kidTop = 0;

  const finish = (node: number): void => {
    const base = depth > 0 ? chainKids[depth - 1]! : 0;
    let x = node;
    while (kidTop > base) {
      const a = kids[kidTop - 1]!;
      const len = ann.lens[a]!;
      if (set[a] !== set[x] || len !== ann.lens[x] || !isLowerSibling(ann.words, a * W, ann.words, x * W, len, W)) break;
      alive[x] = 0;
      ann.lens[a] = len - 1; // a's slot becomes the parent: same start, one bit shorter
      if (src !== null) src[a] = -1;
      kidTop--;
      x = a;
      if (depth > 0 && ann.lens[chain[depth - 1]!] === len - 1) {
        const container = chain[depth - 1]!; // the parent is the open container itself
        set[container] = set[x]!;
        alive[x] = 0;
        return;
      }
    }
    kids[kidTop++] = x;
  };

  const close = (): void => {
    depth--;
    const node = chain[depth]!;
    const base = chainKids[depth]!;
    for (let t = base; t < kidTop; t++) if (set[kids[t]!] === set[node]) alive[kids[t]!] = 0;
    kidTop = base;
    finish(node);
  };

  for (let k = 0; k < order.length; ) {
    const i = order[k++]!;
    let own = tags[i]!;
    let text = inSrc !== null ? inSrc[i]! : -1;
    while (k < order.length && lens[order[k]!] === lens[i] && compareWords(words, order[k]! * W, words, i * W, W) === 0) {
      if (text < 0 && inSrc !== null) text = inSrc[order[k]!]!;
      own = sets.union(own, tags[order[k++]!]!);
    }
    while (depth > 0 && !containsWords(ann.words, chain[depth - 1]! * W, ann.lens[chain[depth - 1]!]!, words, i * W, W)) {
      close();
    }
    const node = ann.count;
    ann.push(words, i * W, lens[i]!);
    if (src !== null) src[node] = text;
    // Modules whose result contains this prefix: its own, and those of every open container.
    set[node] = depth > 0 ? sets.union(set[chain[depth - 1]!]!, own) : own;
    alive[node] = 1;
    chain[depth] = node;
    chainKids[depth] = kidTop;
    depth++;
  }
  while (depth > 0) close();

  const prefixes = formatPrefixList(ann, alive);
  const table = new PrefixTable(family, Math.max(1, prefixes.length));
  const out = new Int32Array(prefixes.length);
  for (let node = 0, k = 0; node < ann.count; node++) {
    if (alive[node] !== 1) continue;
    if (W === 1) table.words[k] = ann.words[node]!;
    else table.words.set(ann.words.subarray(node * 4, node * 4 + 4), k * 4);
    table.lens[k] = ann.lens[node]!;
    out[k++] = set[node]!;
  }
  table.count = prefixes.length;
  return { prefixes, table, sets: out };
}
