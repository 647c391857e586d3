import { comparePrefixes, diffTagged, parsePrefixTexts, type TaggedDiff, type TaggedPrefix } from "@rlc/shared/prefix";

/*
 * The diff of two revisions of one chain (the later stored as changes, one a revision, against
 * the earlier) from the diffs of the steps between them: what a cold diff of two
 * million-prefix revisions a few refreshes apart reads is their stored changes (~100 kB each),
 * not the 10 MB content of the chain's root, inflated, parsed and walked against another.
 */

/**
 * diff(r0, rn) from diff(r0, r1), …, diff(rn-1, rn): each prefix a step touched is compared
 * between what it was before the first step that touched it and after the last (a prefix no
 * step touched is the same in both), in diffTagged's order and with its reading of
 * communities.
 */
export function composeDiffs(steps: readonly TaggedDiff[]): TaggedDiff {
  const before = new Map<string, readonly string[] | null>();
  const after = new Map<string, readonly string[] | null>();
  const touch = (prefix: string, was: readonly string[] | null, now: readonly string[] | null) => {
    if (!before.has(prefix)) before.set(prefix, was);
    after.set(prefix, now);
  };
  for (const d of steps) {
    for (const r of d.removed) touch(r.prefix, r.communities, null);
    for (const a of d.added) touch(a.prefix, null, a.communities);
    for (const c of d.changed) touch(c.prefix, c.from_communities, c.to_communities);
  }
  return diffTagged(sortedTagged(before), sortedTagged(after));
}

/** The present ones of `states` as a tagged list sorted as diffTagged reads it (IPv4 then IPv6, by address then length). */
function sortedTagged(states: ReadonlyMap<string, readonly string[] | null>): TaggedPrefix[] {
  const out: TaggedPrefix[] = [];
  for (const v6 of [false, true]) {
    const items: TaggedPrefix[] = [];
    for (const [prefix, communities] of states) if (communities !== null && prefix.includes(":") === v6) items.push({ prefix, communities: [...communities] });
    const table = parsePrefixTexts(items.map((x) => x.prefix))[v6 ? "v6" : "v4"];
    const order = items.map((_, i) => i).sort((i, j) => comparePrefixes(table, i, table, j));
    for (const i of order) out.push(items[i]!);
  }
  return out;
}
