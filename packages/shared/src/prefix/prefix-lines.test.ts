import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalCidr, parsePrefixTexts, writePrefixLines } from "./index.js";
import { widePrefix, wideText } from "./whole-space.test-helper.js";

describe("writePrefixLines", () => {
  it("writes each prefix as its canonical text followed by its tag's suffix, and where each line starts", () => {
    const suffixes = [" \n", " 65000:1\n", " 65000:1,65000:2,4200000000:1:2\n", " ü\n", ` ${"x".repeat(40)}\n`].map((t) => new TextEncoder().encode(t));
    fc.assert(
      fc.property(fc.array(fc.tuple(widePrefix, fc.integer({ min: 0, max: 4 })), { maxLength: 30 }), fc.nat(), fc.nat(), (list, a, b) => {
        for (const fam of [4, 6] as const) {
          const mine = list.filter(([p]) => p.fam === fam);
          const texts = mine.map(([p]) => canonicalCidr(wideText(p), { mode: "mask" }));
          const tags = mine.map(([, t]) => t);
          const table = parsePrefixTexts(texts)[fam === 4 ? "v4" : "v6"];
          const from = mine.length ? a % (mine.length + 1) : 0;
          const to = from + (mine.length ? b % (mine.length - from + 1) : 0);
          const { bytes, offsets } = writePrefixLines(table, tags, suffixes, from, to);
          const lines = texts.slice(from, to).map((t, k) => `${t}${new TextDecoder().decode(suffixes[tags[from + k]!])}`);
          expect(new TextDecoder().decode(bytes)).toBe(lines.join(""));
          expect(offsets).toHaveLength(to - from + 1);
          for (let k = 0; k < lines.length; k++) expect(new TextDecoder().decode(bytes.subarray(offsets[k], offsets[k + 1]))).toBe(lines[k]);
        }
      }),
      { numRuns: 500 },
    );
  });
});
