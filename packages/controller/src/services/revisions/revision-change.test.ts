import { canonicalCidr, diffTagged, type TaggedDiff } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { alignContents, forKept, forKeptRuns, withdrawnFrom } from "./revision-align.js";
import { applyChange, decodeChange, encodeChange, makeChange } from "./revision-change.js";
import {
  compactContent,
  contentFromEntries,
  type RevisionContent,
  type RevisionEntry,
  RevisionFamily,
  taggedPrefixes,
  withdrawnCount,
} from "./revision-content.js";
import { diffAligned, diffFromChange, diffFromChangeAlone, reversed } from "./revision-diff.js";
import { composeDiffs } from "./revision-diff-chain.js";
import { decodeContent, encodeContent } from "./revision-encoding.js";

// A revision stored as a change against its parent reads back as the whole content it was made
// from, byte for byte once encoded, through any chain of changes; and the diff and the guard
// computed from the change answer what the walk over both whole contents answers.

/** Every prefix of `root`/`len` down to `depth` more bits, in address-then-length order (pre-order). */
function universe(words: (offset: number, len: number) => string, len: number, depth: number, offset = 0, out: string[] = []): string[] {
  out.push(words(offset, len));
  if (depth > 0) {
    universe(words, len + 1, depth - 1, offset, out);
    universe(words, len + 1, depth - 1, offset + 2 ** (depth - 1), out);
  }
  return out;
}
const V4 = universe((o, len) => `10.${o * 8}.0.0/${len}`, 8, 5);
// Canonical texts, as every built content holds (a compact content writes its texts from its words).
const V6 = universe((o, len) => `2001:db8:${(o << 12).toString(16)}::/${len}`, 32, 4).map((t) => canonicalCidr(t));
const COMMUNITIES = [[], ["65000:1"], ["65000:1", "65000:2"], ["65000:3"], ["65000:2"]];
const MODULES = ["m-a", "m-b", "m-c", "m-d"];

/** A content of chosen prefixes, each with a (communities, modules) pick, its tags numbered in a shuffled order. */
interface Pick {
  v4: (number | null)[];
  v6: (number | null)[];
  shuffle: number;
}
const TAG_PICKS = COMMUNITIES.flatMap((c) => [[MODULES[0]!], [MODULES[1]!, MODULES[2]!], [MODULES[3]!]].map((m) => [c, m] as const));

function contentOf(p: Pick): RevisionContent {
  const entries = (universe: string[], picks: (number | null)[]): RevisionEntry[] =>
    universe.flatMap((prefix, k) => (picks[k] == null ? [] : [[prefix, [...TAG_PICKS[picks[k]!]![0]], [...TAG_PICKS[picks[k]!]![1]]] as RevisionEntry]));
  const c = contentFromEntries(entries(V4, p.v4), entries(V6, p.v6));
  // Renumber the tags (a rotation): a change must carry any numbering the build chose.
  const n = c.tags.length;
  if (n < 2) return c;
  const to = (t: number) => (t + p.shuffle) % n;
  const tags = new Array(n);
  c.tags.forEach((t, k) => {
    tags[to(k)] = t;
  });
  const owner = { modules: c.modules, tags };
  const family = (f: RevisionFamily) => new RevisionFamily(f.texts(), f.tags.map(to), owner);
  return { ...owner, v4: family(c.v4), v6: family(c.v6) };
}

const pickArb = (size: number) =>
  fc.array(fc.option(fc.integer({ min: 0, max: TAG_PICKS.length - 1 }), { nil: null, freq: 2 }), { minLength: size, maxLength: size });
const contentArb = fc.record({ v4: pickArb(V4.length), v6: pickArb(V6.length), shuffle: fc.nat(20) });
/** An edit: some prefixes dropped, some added, some given another tag; or a content drawn afresh. */
const editArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.array(fc.record({ v6: fc.boolean(), at: fc.nat(63), pick: fc.option(fc.nat(TAG_PICKS.length - 1), { nil: null }) }), { maxLength: 6 }),
  },
  { weight: 1, arbitrary: contentArb },
);
const apply = (p: Pick, edit: Pick | { v6: boolean; at: number; pick: number | null }[], shuffle: number): Pick => {
  if (!Array.isArray(edit)) return edit;
  const next = { v4: [...p.v4], v6: [...p.v6], shuffle };
  for (const e of edit) {
    const list = e.v6 ? next.v6 : next.v4;
    list[e.at % list.length] = e.pick;
  }
  return next;
};

describe("revision changes", () => {
  it("a chain of changes over random edits reads back each content byte for byte; diff and guard from the change equal the whole walk's", () => {
    let answeredAlone = 0;
    let composed = 0;
    fc.assert(
      fc.property(contentArb, fc.array(fc.tuple(editArb, fc.nat(20)), { minLength: 1, maxLength: 6 }), (first, edits) => {
        let pick: Pick = first;
        let whole = contentOf(pick);
        const start = whole;
        // The diffs of the steps so far, each from its change alone (null once one could not answer).
        let steps: TaggedDiff[] | null = [];
        // What a reader has: the first content decoded from its bytes, the rest materialised; and
        // the same kept compact (its prefixes parsed, no text a prefix), as the revision store keeps it.
        let read = whole;
        let compact = compactContent(decodeContent(encodeContent(whole)));
        for (const [edit, shuffle] of edits) {
          pick = apply(pick, edit, shuffle);
          const next = contentOf(pick);
          const al = alignContents(whole, next);
          const change = decodeChange(encodeChange(makeChange(read, next, alignContents(read, next))));
          const materialised = applyChange(read, change);
          expect(encodeContent(materialised).equals(encodeContent(next))).toBe(true);
          expect(diffAligned(whole, next, al)).toEqual(diffTagged(taggedPrefixes(whole), taggedPrefixes(next)));
          // The stored change is the alignment the diff of a revision and its parent uses.
          expect(diffAligned(read, materialised, change)).toEqual(diffTagged(taggedPrefixes(whole), taggedPrefixes(next)));
          // …and, without the child's content, from the parent and the change alone, either way round.
          expect(diffFromChange(read, change)).toEqual(diffTagged(taggedPrefixes(whole), taggedPrefixes(next)));
          expect(reversed(diffFromChange(read, change))).toEqual(diffTagged(taggedPrefixes(next), taggedPrefixes(whole)));
          // …and from the change alone where it can answer (no parent tag mapped to other communities).
          const alone = diffFromChangeAlone(change);
          if (alone) {
            answeredAlone++;
            expect(alone).toEqual(diffTagged(taggedPrefixes(whole), taggedPrefixes(next)));
          }
          // The diff of the chain's first content and this one, from the steps' diffs, either way round.
          steps = alone && steps ? [...steps, alone] : null;
          if (steps && steps.length > 1) {
            composed++;
            expect(composeDiffs(steps)).toEqual(diffTagged(taggedPrefixes(start), taggedPrefixes(next)));
            expect(reversed(composeDiffs(steps))).toEqual(diffTagged(taggedPrefixes(next), taggedPrefixes(start)));
          }
          // A change stored before it kept the parent's part answers nothing alone.
          const { parentCommunities: _, ...older } = change;
          expect(diffFromChangeAlone(older)).toBeNull();
          expect(withdrawnFrom(whole, next, al)).toBe(withdrawnCount(whole, next));
          const fromCompact = applyChange(compact, change);
          expect(fromCompact.v4.hasTexts || fromCompact.v6.hasTexts).toBe(false);
          expect(encodeContent(fromCompact).equals(encodeContent(next))).toBe(true);
          expect(alignContents(compact, next)).toEqual(alignContents(read, next));
          expect(diffAligned(compact, fromCompact, change)).toEqual(diffTagged(taggedPrefixes(whole), taggedPrefixes(next)));
          whole = next;
          read = materialised;
          compact = fromCompact;
        }
      }),
      { numRuns: 300 },
    );
    // Most changes answer alone: the assertions above ran.
    expect(answeredAlone).toBeGreaterThan(100);
    expect(composed).toBeGreaterThan(100);
  });

  it("a change of a few prefixes holds those few: kept prefixes and a renumbering of the tags cost nothing", () => {
    const big: Pick = { v4: V4.map((_, k) => k % 3), v6: V6.map(() => 4), shuffle: 0 };
    const next: Pick = { ...big, v4: big.v4.map((t, k) => (k === 5 ? null : t)), shuffle: 7 };
    const change = makeChange(contentOf(big), contentOf(next));
    expect([change.v4.removed.length, change.v4.added.length, change.v4.retagAt.length, change.v6.retagAt.length]).toEqual([1, 0, 0, 0]);
  });

  it("walks the kept prefixes a run at a time as forKept does one at a time; the tag map and retags are the majority's (brute force)", () => {
    fc.assert(
      fc.property(contentArb, editArb, fc.nat(20), (first, edit, shuffle) => {
        const a = contentOf(first);
        const b = contentOf(apply(first, edit, shuffle));
        const al = alignContents(a, b);
        const change = makeChange(a, b, al);
        const votes = new Map<number, Map<number, number>>();
        for (const fam of ["v4", "v6"] as const) {
          const single: [number, number][] = [];
          forKept(al[fam], a[fam].length, (i, j) => single.push([i, j]));
          const runs: [number, number][] = [];
          forKeptRuns(al[fam], a[fam].length, (i, j, n) => {
            expect(n).toBeGreaterThan(0);
            for (let k = 0; k < n; k++) runs.push([i + k, j + k]);
          });
          expect(runs).toEqual(single);
          for (const [i, j] of single) {
            const v = votes.get(a[fam].tags[i]!) ?? new Map<number, number>();
            v.set(b[fam].tags[j]!, (v.get(b[fam].tags[j]!) ?? 0) + 1);
            votes.set(a[fam].tags[i]!, v);
          }
        }
        const map = a.tags.map((_, o) => {
          const v = [...(votes.get(o) ?? [])].sort(([t1, n1], [t2, n2]) => n2 - n1 || t1 - t2);
          return v.length ? v[0]![0] : -1;
        });
        expect([...change.map]).toEqual(map);
        for (const fam of ["v4", "v6"] as const) {
          const retag: number[] = [];
          forKept(al[fam], a[fam].length, (i, j) => {
            if (map[a[fam].tags[i]!] !== b[fam].tags[j]) retag.push(j);
          });
          expect([...change[fam].retagAt]).toEqual(retag);
          expect([...change[fam].retagTags]).toEqual(retag.map((j) => b[fam].tags[j]));
        }
      }),
      { numRuns: 300 },
    );
  });

  it("refuses a change applied to a content it was not made from", () => {
    const a = contentOf({ v4: V4.map(() => 1), v6: [], shuffle: 0 });
    const b = contentOf({ v4: V4.map((_, k) => (k < 4 ? null : 1)), v6: [], shuffle: 0 });
    const change = makeChange(a, b);
    expect(() => applyChange(b, change)).toThrow(/does not fit/);
  });
});
