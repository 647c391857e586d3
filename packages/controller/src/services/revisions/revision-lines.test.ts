import { createHash } from "node:crypto";
import { parsePrefixTexts } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type FamilyLines, flatDigestOfLines, joinLines, type LinesPiece, linesOf as linesOfTable, offsetsOf, piecesOf, suffixesOf } from "./revision-lines.js";

const bytesOf = (l: FamilyLines) => Buffer.concat(piecesOf(l));
/** Lines of one family's prefix texts (canonical, in any order), tag i's communities joined[i]. */
const linesOf = (prefixes: readonly string[], tags: readonly number[], joined: readonly string[]) => {
  const table = parsePrefixTexts(prefixes);
  return linesOfTable(table.v6.count ? table.v6 : table.v4, tags, suffixesOf(joined.map((j) => ({ communities: j ? j.split(",") : [] }))));
};
const sha = (text: string) => `sha256:${createHash("sha256").update(text).digest("hex")}`;
const textOf = (list: readonly string[], tags: readonly number[], joined: readonly string[]) => list.map((p, i) => `${p} ${joined[tags[i]!]}\n`).join("");

describe("revision lines", () => {
  const joined = ["", "65000:1", "65000:1,65000:2", "65000:ü"];
  const entries = fc.array(fc.tuple(fc.constantFrom("11.0.0.0/24", "0.0.0.0/0", "10.1.2.3/32", "255.255.255.255/32"), fc.integer({ min: 0, max: 3 })), {
    maxLength: 40,
  });

  it("are the lines the digest hashes, with each line's offset, non-ASCII communities included", () => {
    fc.assert(
      fc.property(entries, (list) => {
        const prefixes = list.map((e) => e[0]);
        const tags = list.map((e) => e[1]);
        const lines = linesOf(prefixes, tags, joined);
        const text = textOf(prefixes, tags, joined);
        expect(bytesOf(lines).toString("utf8")).toBe(text);
        for (let i = 0; i < list.length; i++) {
          expect(
            bytesOf(lines)
              .subarray(offsetsOf(lines)[i], offsetsOf(lines)[i + 1])
              .toString("utf8"),
          ).toBe(`${prefixes[i]} ${joined[tags[i]!]}\n`);
        }
        expect(flatDigestOfLines(lines, linesOf([], [], joined))).toBe(sha(text));
      }),
    );
  });

  it("write IPv6 prefixes as their canonical texts", () => {
    const texts = ["::/0", "2a00::/32", "2001:db8::1:0:0:1/128", "2001:db8:0:1:1:1:1:1/128", "::ffff:1.2.3.4/128", "fe80::/10"];
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...texts), fc.integer({ min: 0, max: 3 })), { maxLength: 20 }), (list) => {
        const prefixes = list.map((e) => e[0]);
        const tags = list.map((e) => e[1]);
        expect(bytesOf(linesOf(prefixes, tags, joined)).toString("utf8")).toBe(textOf(prefixes, tags, joined));
      }),
    );
  });

  it("joined from ranges of other lines, over generations, give the lines of the joined entries", () => {
    fc.assert(
      fc.property(entries, fc.array(fc.array(fc.tuple(fc.nat(), fc.nat(), entries), { maxLength: 6 }), { maxLength: 6 }), (first, generations) => {
        let prefixes = first.map((e) => e[0]);
        let tags = first.map((e) => e[1]);
        let lines = linesOf(prefixes, tags, joined);
        for (const cuts of generations) {
          // Keep ranges of the last generation, with new entries between them.
          const points = [...new Set(cuts.map((c) => c[0] % (prefixes.length + 1)))].sort((a, b) => a - b);
          const pieces: LinesPiece[] = [];
          const nextPrefixes: string[] = [];
          const nextTags: number[] = [];
          let at = 0;
          points.forEach((point, k) => {
            const p = Math.max(point, at);
            const skip = Math.min(p + (cuts[k]![1] % 3), prefixes.length);
            pieces.push({ lines, from: at, to: p });
            nextPrefixes.push(...prefixes.slice(at, p));
            nextTags.push(...tags.slice(at, p));
            const added = cuts[k]![2];
            pieces.push({
              lines: linesOf(
                added.map((e) => e[0]),
                added.map((e) => e[1]),
                joined,
              ),
              from: 0,
              to: added.length,
            });
            nextPrefixes.push(...added.map((e) => e[0]));
            nextTags.push(...added.map((e) => e[1]));
            at = Math.max(skip, p);
          });
          pieces.push({ lines, from: at, to: prefixes.length });
          nextPrefixes.push(...prefixes.slice(at));
          nextTags.push(...tags.slice(at));
          lines = joinLines(pieces);
          prefixes = nextPrefixes;
          tags = nextTags;
          expect(bytesOf(lines).toString("utf8")).toBe(textOf(prefixes, tags, joined));
          expect(Array.from(offsetsOf(lines))).toEqual(Array.from(offsetsOf(linesOf(prefixes, tags, joined))));
        }
      }),
    );
  });

  it("copy their pieces into one past a few thousand, and keep the bytes", () => {
    const prefixes = Array.from({ length: 10_000 }, (_, i) => `11.${i >> 8}.${i & 255}.0/24`);
    const tags = prefixes.map((_, i) => i % 3);
    const lines = linesOf(prefixes, tags, joined);
    // Every other line from a copy written apart: no two pieces follow each other in one block.
    const copy = linesOf(prefixes, tags, joined);
    const one = joinLines(prefixes.map((_, i) => ({ lines: i % 2 ? copy : lines, from: i, to: i + 1 })));
    expect(one.runs).toHaveLength(1);
    expect(bytesOf(one).equals(bytesOf(lines))).toBe(true);
    expect(Array.from(offsetsOf(one))).toEqual(Array.from(offsetsOf(lines)));
  });

  it("share the offsets of the lines they are joined from: a join copies no line's offset", () => {
    const prefixes = Array.from({ length: 1000 }, (_, i) => `11.${i >> 8}.${i & 255}.0/24`);
    const tags = prefixes.map((_, i) => i % 3);
    const lines = linesOf(prefixes, tags, joined);
    const added = linesOf(["12.0.0.0/24"], [1], joined);
    const next = joinLines([
      { lines, from: 0, to: 400 },
      { lines: added, from: 0, to: 1 },
      { lines, from: 401, to: 1000 },
    ]);
    expect(next.count).toBe(1000);
    expect(next.runs.map((r) => r.offsets)).toEqual([lines.runs[0]!.offsets, added.runs[0]!.offsets, lines.runs[0]!.offsets]);
    expect(next.runs.every((r, k) => r.offsets === [lines, added, lines][k]!.runs[0]!.offsets)).toBe(true);
    // Kept lines next to each other again make one run of the block they come from.
    const again = joinLines([
      { lines: next, from: 0, to: 400 },
      { lines: next, from: 401, to: 1000 },
    ]);
    expect(again.runs).toHaveLength(2);
    expect(
      joinLines([
        { lines: next, from: 0, to: 400 },
        { lines: next, from: 400, to: 1000 },
      ]).runs,
    ).toHaveLength(3);
    expect(bytesOf(again).toString("utf8")).toBe(
      textOf([...prefixes.slice(0, 400), ...prefixes.slice(401)], [...tags.slice(0, 400), ...tags.slice(401)], joined),
    );
  });
});
