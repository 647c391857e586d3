import { formatPrefix, parseAddress, parseCidr } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compactContent, contentFromEntries, type RevisionContent, type RevisionEntry } from "../revisions/revision-content.js";
import { decodeContent, encodeContent } from "../revisions/revision-encoding.js";
import { buildRevisionLayer, contentChange, longestInLayer, nextRevisionLayer, type RevisionLayer } from "./lookup-revision.js";

// Small address spaces (10.0.0.0/22 with lengths 20..32, 2a00::/118 with 116..128), so that
// random revisions nest prefixes in one another and random edits remove, add and re-tag them.
// Canonical texts, as a revision's content holds them.
const canonical = (p: string) => formatPrefix(parseCidr(p, { mode: "mask" }));
const v4 = fc
  .record({ off: fc.integer({ min: 0, max: 1023 }), len: fc.integer({ min: 20, max: 32 }) })
  .map(({ off, len }) => canonical(`10.0.${off >> 8}.${off & 255}/${len}`));
const v6 = fc
  .record({ off: fc.integer({ min: 0, max: 1023 }), len: fc.integer({ min: 116, max: 128 }) })
  .map(({ off, len }) => canonical(`2a00::${off.toString(16)}/${len}`));
const communities = fc.constantFrom(["65000:1"], ["65000:2"], ["65000:1", "65000:2"], []);
const revision = fc.array(fc.tuple(fc.oneof({ weight: 3, arbitrary: v4 }, { weight: 1, arbitrary: v6 }), communities), { maxLength: 40 });
const edit = fc.record({ keep: fc.integer(), retag: fc.integer(), add: revision });

const byAddress = (a: RevisionEntry, b: RevisionEntry) => {
  const x = parseCidr(a[0]);
  const y = parseCidr(b[0]);
  for (let w = 0; w < x.words.length; w++) if (x.words[w] !== y.words[w]) return x.words[w]! < y.words[w]! ? -1 : 1;
  return x.length - y.length;
};

/** A revision's content from (prefix, communities) pairs: one entry a prefix (the last wins), sorted, canonical texts. */
function contentOf(pairs: readonly [string, string[]][]): RevisionContent {
  const byPrefix = new Map<string, string[]>();
  for (const [p, c] of pairs) byPrefix.set(p, c);
  const entries: RevisionEntry[] = [...byPrefix].map(([p, c]) => [p, c, ["00000000-0000-0000-0000-000000000001"]]);
  return contentFromEntries(entries.filter((e) => !e[0].includes(":")).sort(byAddress), entries.filter((e) => e[0].includes(":")).sort(byAddress));
}

/** The revision's pairs after an edit: some dropped, some given other communities, some added. */
function edited(pairs: readonly [string, string[]][], e: { keep: number; retag: number; add: [string, string[]][] }): [string, string[]][] {
  const out = pairs.filter((_, k) => (e.keep >> (k % 31)) & 1).map(([p, c], k): [string, string[]] => [p, (e.retag >> (k % 29)) & 1 ? ["65000:9"] : c]);
  return [...out, ...e.add];
}

/** Addresses where answers change: each prefix's first and last address and the ones just outside, and a few fixed ones. */
function probes(contents: RevisionContent[]): string[] {
  const out = new Set(["10.0.0.0", "10.0.3.255", "10.0.4.0", "9.255.255.255", "2a00::", "2a00::3ff", "2a00::400", "::"]);
  for (const c of contents) {
    for (const p of [...c.v4.texts(), ...c.v6.texts()]) {
      const parsed = parseCidr(p);
      const words = [...parsed.words];
      const bits = parsed.family === 4 ? 32 : 128;
      const last = words.map((w, i) => {
        const from = i * 32;
        const hostFrom = Math.max(0, Math.min(32, parsed.length - from));
        return hostFrom >= 32 ? w : (w | (2 ** (32 - hostFrom) - 1)) >>> 0;
      });
      const fmt = (ws: number[]) =>
        parsed.family === 4
          ? [24, 16, 8, 0].map((s) => (ws[0]! >>> s) & 255).join(".")
          : ws.flatMap((w) => [(w >>> 16).toString(16), (w & 0xffff).toString(16)]).join(":");
      out.add(fmt(words));
      out.add(fmt(last));
      if (bits === 32) {
        out.add(fmt([(last[0]! + 1) >>> 0]));
        out.add(fmt([(words[0]! - 1) >>> 0]));
      }
    }
  }
  return [...out];
}

const answers = (layer: RevisionLayer, addresses: string[]) => addresses.map((a) => longestInLayer(layer, parseAddress(a)));

describe("the lookup's revision layer", () => {
  it("carried over by each change answers as a layer built from the revision's content, over random revisions and random edits", () => {
    fc.assert(
      fc.property(revision, fc.array(edit, { minLength: 1, maxLength: 5 }), (first, edits) => {
        let pairs = first;
        const kept: RevisionContent[] = [contentOf(pairs)]; // the layer's content stays in memory, as the revision store keeps it
        let layer = buildRevisionLayer(1, kept[0]!);
        // The same contents as the store keeps them: read back and compact (parsed, no text a prefix).
        const compactOf = (c: RevisionContent) => compactContent(decodeContent(encodeContent(c)));
        let last = compactOf(kept[0]!);
        let layerCompact = buildRevisionLayer(1, last);
        for (const [k, e] of edits.entries()) {
          pairs = edited(pairs, e);
          const next = contentOf(pairs);
          kept.push(next);
          layer = nextRevisionLayer(layer, k + 2, next);
          const fresh = buildRevisionLayer(k + 2, next);
          const at = probes(kept.slice(-2));
          expect(answers(layer, at)).toEqual(answers(fresh, at));
          const nextCompact = compactOf(next);
          expect(contentChange(last, nextCompact)).toEqual(contentChange(kept.at(-2)!, next));
          layerCompact = nextRevisionLayer(layerCompact, k + 2, nextCompact);
          expect(answers(layerCompact, at)).toEqual(answers(fresh, at));
          expect(answers(buildRevisionLayer(k + 2, nextCompact), at)).toEqual(answers(fresh, at));
          last = nextCompact;
        }
      }),
      { numRuns: 300 },
    );
  });

  it("is carried over, not built again, when the change is small, and built again once the content is gone or the change is large", () => {
    const pairs = Array.from({ length: 5000 }, (_, i): [string, string[]] => [`10.${i >> 8}.${i & 255}.0/24`, ["65000:1"]]);
    const first = contentOf(pairs);
    const layer = buildRevisionLayer(1, first);
    const small = contentOf([...pairs.slice(10), ["11.0.0.0/24", ["65000:2"]]]);
    const carried = nextRevisionLayer(layer, 2, small);
    expect(carried.index).toBe(layer.index);
    expect(carried.goneCount).toBe(10);
    expect([...carried.added.keys()]).toEqual(["11.0.0.0/24"]);
    expect(longestInLayer(carried, parseAddress("10.0.0.7"))).toBeNull();
    expect(longestInLayer(carried, parseAddress("10.0.10.7"))).toEqual({ revision_id: 2, prefix: "10.0.10.0/24", communities: ["65000:1"] });
    expect(longestInLayer(carried, parseAddress("11.0.0.1"))).toEqual({ revision_id: 2, prefix: "11.0.0.0/24", communities: ["65000:2"] });

    const large = contentOf(pairs.slice(2000));
    expect(nextRevisionLayer(carried, 3, large).index).not.toBe(layer.index);
    const gone = { ...layer, source: { deref: () => undefined } as unknown as WeakRef<RevisionContent> };
    expect(nextRevisionLayer(gone, 2, small).index).not.toBe(layer.index);
  });

  it("finds what changed between two contents: removed, added and re-tagged prefixes of both families", () => {
    const from = contentOf([
      ["10.0.0.0/24", ["65000:1"]],
      ["10.0.1.0/24", ["65000:1"]],
      ["10.0.2.0/24", ["65000:1"]],
      ["2a00::/32", ["65000:1"]],
    ]);
    const to = contentOf([
      ["10.0.0.0/24", ["65000:1"]],
      ["10.0.1.0/24", ["65000:2"]],
      ["10.0.1.0/25", ["65000:1"]],
      ["2a00::/32", ["65000:1"]],
      ["2a01::/32", []],
    ]);
    expect(contentChange(from, to)).toEqual({
      removed: ["10.0.1.0/24", "10.0.2.0/24"],
      added: [
        ["10.0.1.0/24", ["65000:2"]],
        ["10.0.1.0/25", ["65000:1"]],
        ["2a01::/32", []],
      ],
    });
    expect(contentChange(from, to, 2)).toBeNull();
    expect(contentChange(to, to)).toEqual({ removed: [], added: [] });
  });
});
