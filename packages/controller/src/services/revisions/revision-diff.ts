import { NotFoundError } from "@rlc/shared/errors";
import { type CommunityChange, diffTagged, type TaggedDiff } from "@rlc/shared/prefix";
import type { Db } from "../../db/connect.js";
import { type Alignment, alignContents, forKept } from "./revision-align.js";
import type { RevisionContent } from "./revision-content.js";
import type { RevisionStore } from "./revision-store.js";

/**
 * diffTagged's answer for two contents, from their alignment: the removed and added prefixes
 * are the alignment's, and a kept prefix changed when its communities differ, which is decided
 * once a pair of tags (by diffTagged itself, on a one-prefix list each), not once a prefix.
 */
export function diffAligned(from: RevisionContent, to: RevisionContent, al: Alignment): TaggedDiff {
  const diff: TaggedDiff = { added: [], removed: [], changed: [] };
  const pairs = new Map<number, Omit<CommunityChange, "prefix"> | null>();
  const nNew = Math.max(1, to.tags.length);
  const changeOf = (a: number, b: number) => {
    const key = a * nNew + b;
    let c = pairs.get(key);
    if (c === undefined) {
      const [changed] = diffTagged(
        [{ prefix: "0.0.0.0/0", communities: from.tags[a]!.communities }],
        [{ prefix: "0.0.0.0/0", communities: to.tags[b]!.communities }],
      ).changed;
      c = changed ? { from_communities: changed.from_communities, to_communities: changed.to_communities } : null;
      pairs.set(key, c);
    }
    return c;
  };
  for (const fam of ["v4", "v6"] as const) {
    const a = from[fam];
    const b = to[fam];
    for (const i of al[fam].removed) diff.removed.push({ prefix: a.prefixAt(i), communities: from.tags[a.tags[i]!]!.communities });
    for (const j of al[fam].added) diff.added.push({ prefix: b.prefixAt(j), communities: to.tags[b.tags[j]!]!.communities });
    forKept(al[fam], a.length, (i, j) => {
      const ta = a.tags[i]!;
      const tb = b.tags[j]!;
      if (ta === tb && from.tags === to.tags) return;
      const c = changeOf(ta, tb);
      if (c) diff.changed.push({ prefix: b.prefixAt(j), from_communities: c.from_communities, to_communities: c.to_communities });
    });
  }
  return diff;
}

/**
 * The diff of two revisions. When one is stored as a change against the other, the change is
 * the alignment (no walk over the prefixes' texts); else one merge walk over both.
 */
export async function diffRevisions(store: RevisionStore, db: Db, tenantId: string, a: number, b: number): Promise<TaggedDiff> {
  const content = async (id: number) => {
    const c = await store.content(db, tenantId, id);
    if (!c) throw new NotFoundError("revision", id);
    return c;
  };
  const from = await content(a);
  const to = await content(b);
  let al: Alignment | null = null;
  const forward = await store.changeFrom(db, tenantId, a, b);
  if (forward) al = forward;
  else {
    const back = await store.changeFrom(db, tenantId, b, a);
    if (back) al = { v4: { removed: back.v4.added, added: back.v4.removed }, v6: { removed: back.v6.added, added: back.v6.removed } };
  }
  return diffAligned(from, to, al ?? alignContents(from, to));
}
