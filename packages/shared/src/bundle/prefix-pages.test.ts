import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BundleError } from "./errors.js";
import { diffPrefixLines } from "./prefix-delta.js";
import { pagesOf, pagesOfLines, type SectionPages, updatePages } from "./prefix-pages.js";
import { encodePrefixLines } from "./prefix-section.js";
import { chains, edit, fnv1a, model, section, sha } from "./section-chains.test-helper.js";
import { applyTaggedDelta, SectionTags, type TaggedSection, tagSection } from "./tagged-section.js";

// rl-prefix-pages/1 against a brute-force model written from its definition (lines as strings,
// FNV-1a in BigInt, a hash object a page): pagesOf of any section, and updatePages after chains
// of deltas (diffPrefixLines between random sections), taking most digests from the base.

const plain = (p: SectionPages) => ({ ends: [...p.ends], digests: p.digests, root: p.root });

describe("rl-prefix-pages/1", () => {
  it("the model's FNV-1a is the published one", () => {
    expect(fnv1a("")).toBe(0x811c9dc5);
    expect(fnv1a("a")).toBe(0xe40c292c);
    expect(fnv1a("foobar")).toBe(0xbf9cf968);
  });

  it("pagesOf is the model's pages, and the columns' page ends are the model's", () => {
    fc.assert(
      fc.property(section, (lines) => {
        const bytes = encodePrefixLines(lines);
        const want = model(lines);
        expect(plain(pagesOf(bytes))).toEqual(want);
        const tagged = tagSection(bytes, new SectionTags());
        expect([...tagged.pageEnd]).toEqual(lines.map((l) => ((fnv1a(l) & 63) === 0 ? 1 : 0)));
        expect(plain(pagesOfLines(tagged))).toEqual(want);
      }),
      { numRuns: 200 },
    );
  });

  it("after each delta of a chain, updatePages from the base's pages is pagesOf the new section, and the columns are the new section's read whole", () => {
    fc.assert(
      fc.property(chains, ({ first, steps }) => {
        const tags = new SectionTags();
        let lines = first;
        let tagged: TaggedSection = tagSection(encodePrefixLines(lines), tags);
        let pages = pagesOf(tagged.bytes);
        for (const s of steps) {
          const next = "lines" in s ? s.lines : edit(lines, s.e);
          let seen: SectionPages | null = null;
          const change = applyTaggedDelta(tagged, diffPrefixLines(lines, next), (bytes, section, map) => {
            // What the check sees is enough: the page root before any added line is read.
            seen = updatePages(pages, section, map);
            expect(seen.root).toBe(pagesOf(bytes).root);
          });
          const updated = updatePages(pages, change.section, change);
          const want = model(next);
          expect(plain(updated)).toEqual(want);
          expect(plain(seen!)).toEqual(want);
          expect([...change.section.pageEnd]).toEqual(next.map((l) => ((fnv1a(l) & 63) === 0 ? 1 : 0)));
          // Kept runs short and long (walked, or copied as subarrays) and added lines: as tagSection reads the bytes.
          const whole = tagSection(change.section.bytes, tags);
          expect([...change.section.starts]).toEqual([...whole.starts]);
          expect([...change.section.prefixLength]).toEqual([...whole.prefixLength]);
          expect([...change.section.tagOf]).toEqual([...whole.tagOf]);
          // The kept runs say truly where each kept line came from, and every line is kept or added.
          const from = new Array<number>(next.length).fill(-1);
          for (let r = 0; r < change.kept.length; r += 3) {
            for (let i = 0; i < change.kept[r + 2]!; i++) {
              expect(next[change.kept[r + 1]! + i]).toBe(lines[change.kept[r]! + i]);
              from[change.kept[r + 1]! + i] = change.kept[r]! + i;
            }
          }
          for (const a of change.added) from[a] = -2;
          expect(from.every((f) => f !== -1)).toBe(true);
          expect(from.filter((f) => f >= 0)).toEqual([...from.filter((f) => f >= 0)].sort((a, b) => a - b));
          lines = next;
          tagged = change.section;
          pages = updated;
        }
      }),
      { numRuns: 150 },
    );
  });

  it("a delta hashes only the pages it touched: one changed line of 4,000 re-hashes at most three pages", () => {
    const lines = Array.from({ length: 4000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24\t65000:100`);
    const base = tagSection(encodePrefixLines(lines), new SectionTags());
    const pages = pagesOf(base.bytes);
    const next = lines.map((l, i) => (i === 2000 ? `${l.slice(0, l.indexOf("\t"))}\t65000:200` : l));
    const change = applyTaggedDelta(base, diffPrefixLines(lines, next));
    expect(updatePages(pages, change.section, change).root).toBe(pagesOf(change.section.bytes).root);
    // The base's digests blanked: a page taken from the base comes out blank, one hashed does not.
    const blank = { ...pages, digests: Buffer.alloc(pages.digests.length) };
    const updated = updatePages(blank, change.section, change);
    const hashed = Array.from({ length: updated.ends.length }, (_, k) => updated.digests.subarray(k * 32, (k + 1) * 32)).filter((d) => d.some((b) => b !== 0));
    expect(pages.ends.length).toBeGreaterThan(30);
    expect(hashed.length).toBeGreaterThanOrEqual(1);
    expect(hashed.length).toBeLessThanOrEqual(3);
  });

  it("a page of added lines between two kept pages: the base digests around it keep their places", () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `10.${i >> 7}.${(i & 127) * 2}.0/24\t65000:100`);
    const base = tagSection(encodePrefixLines(lines), new SectionTags());
    const f = base.pageEnd.indexOf(1, 1000);
    // The prefix between line f's and the next one's, tagged so that it ends a page by itself.
    const prefix = lines[f]!.replace(/\.(\d+)\.0\/24\t.*/, (_, c) => `.${Number(c) + 1}.0/24`);
    let n = 0;
    while ((fnv1a(`${prefix}\t65000:${n}`) & 63) !== 0) n++;
    const next = [...lines.slice(0, f + 1), `${prefix}\t65000:${n}`, ...lines.slice(f + 1)];
    const change = applyTaggedDelta(base, diffPrefixLines(lines, next));
    expect([...change.added]).toEqual([f + 1]);
    const pages = pagesOf(base.bytes);
    expect(plain(updatePages(pages, change.section, change))).toEqual(model(next));
    const blank = updatePages({ ...pages, digests: Buffer.alloc(pages.digests.length) }, change.section, change);
    const hashed = Array.from({ length: blank.ends.length }, (_, k) => blank.digests.subarray(k * 32, (k + 1) * 32).some((x) => x !== 0));
    expect(hashed.filter(Boolean).length).toBe(1);
  });

  it("a script that writes one run of keeps as several (=1 then =N-1) gives the same kept runs as the one step, so no page more is hashed", () => {
    const lines = Array.from({ length: 3000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24\t65000:100`);
    const next = lines.filter((_, i) => i % 500 !== 7);
    const delta = diffPrefixLines(lines, next);
    const split = Buffer.from(
      delta.toString("latin1").replace(/^=(\d+)$/gm, (step, n) => (Number(n) > 1 ? `=1\n=${Number(n) - 1}` : step)),
      "latin1",
    );
    expect(split.length).toBeGreaterThan(delta.length);
    const base = tagSection(encodePrefixLines(lines), new SectionTags());
    const whole = applyTaggedDelta(base, delta);
    const parts = applyTaggedDelta(base, split);
    expect([...parts.kept]).toEqual([...whole.kept]);
    const pages = pagesOf(base.bytes);
    expect(plain(updatePages(pages, parts.section, parts))).toEqual(model(next));
  });

  it("pages of another base than the delta's give another root, not the new section's", () => {
    const lines = Array.from({ length: 800 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24\t65000:100`);
    const other = lines.map((l, i) => (i === 100 ? `${l.slice(0, l.indexOf("\t"))}\t65000:200` : l));
    const base = tagSection(encodePrefixLines(lines), new SectionTags());
    const next = lines.slice(0, 700);
    const change = applyTaggedDelta(base, diffPrefixLines(lines, next));
    expect(updatePages(pagesOf(base.bytes), change.section, change).root).toBe(pagesOf(change.section.bytes).root);
    expect(updatePages(pagesOf(encodePrefixLines(other)), change.section, change).root).not.toBe(pagesOf(change.section.bytes).root);
  });

  it("an empty body has no page and the root of nothing; what is no section is malformed", () => {
    const empty = pagesOf(encodePrefixLines([]));
    expect(empty.ends.length).toBe(0);
    expect(empty.root).toBe(sha("").toString("hex"));
    expect(() => pagesOf(Buffer.from("rl-prefixes/1\n10.0.0.0/8\t"))).toThrow(BundleError);
    expect(() => pagesOf(Buffer.from(""))).toThrow(BundleError);
  });
});
