import { parsePrefixTexts, sortedPairs } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { blockOf, mayStartIn, occupancyOf, rangeIn } from "./revision-blocks.js";

describe("rangeIn", () => {
  it("finds the prefixes of a block in a large IPv4 table (searched on the numbers) as a scan does", () => {
    // 12,000 prefixes over three /16s and their neighbours, many equal addresses of several lengths,
    // drawn from a seed (fast-check's arrays repeat their values too much for that many).
    const block = fc.record({ a: fc.constantFrom(0x0b00, 0x0b01, 0x0b02, 0x0b03, 0xffff), low: fc.nat(0xffff), len: fc.integer({ min: 4, max: 32 }) });
    fc.assert(
      fc.property(fc.integer({ min: 1 }), fc.array(block, { minLength: 1, maxLength: 20 }), fc.boolean(), (seed, blocks, strict) => {
        let x = seed;
        const next = () => {
          x ^= x << 13;
          x ^= x >>> 17;
          x ^= x << 5;
          return x >>> 0;
        };
        const texts = Array.from({ length: 12_000 }, () => {
          const a = [0x0b00, 0x0b01, 0x0b03, 0xffff][next() % 4]!;
          const low = next() & 0xffff;
          return `${a >>> 8}.${a & 255}.${low >>> 8}.${low & 255}/${12 + (next() % 21)}`;
        });
        const parsed = parsePrefixTexts(texts).v4;
        const t = sortedPairs(parsed, new Uint32Array(parsed.count), 1).table;
        expect(t.count).toBeGreaterThan(4096);
        for (const { a, low, len } of blocks) {
          const b = blockOf(Uint32Array.of(((a << 16) | low) >>> 0), 0, 1, len);
          const inside: number[] = [];
          for (let i = 0; i < t.count; i++) {
            const w = t.words[i]!;
            if (w < b.start[0]! || w > b.last[0]!) continue;
            if (t.lens[i]! < b.len || (strict && b.len > 0 && t.lens[i] === b.len)) continue;
            inside.push(i);
          }
          const [lo, hi] = rangeIn(t, b, strict);
          expect(Array.from({ length: hi - lo }, (_, k) => lo + k)).toEqual(inside);
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe("occupancyOf", () => {
  it("tells where no prefix of an IPv4 table starts: mayStartIn is false only for address ranges no prefix starts in", () => {
    const prefix = fc.record({ a: fc.nat(0xff), b: fc.nat(0xff), c: fc.nat(0xff), len: fc.integer({ min: 0, max: 32 }) });
    fc.assert(
      fc.property(
        fc.array(prefix, { maxLength: 60 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 32 })), { minLength: 1, maxLength: 20 }),
        (list, ranges) => {
          // Few first octets, so that ranges often meet a prefix.
          const texts = list.map(({ a, b, c, len }) => `${a % 4}.${b}.${c}.0/${len}`);
          const parsed = parsePrefixTexts(texts).v4;
          const t = sortedPairs(parsed, new Uint32Array(parsed.count), 1).table;
          const occupied = occupancyOf(t);
          for (const [x, len] of ranges) {
            const b = blockOf(Uint32Array.of(((x % 4) << 24) | ((x >>> 2) % 0x1000000)), 0, 1, len);
            let starts = false;
            for (let i = 0; i < t.count; i++) if (t.words[i]! >= b.start[0]! && t.words[i]! <= b.last[0]!) starts = true;
            if (starts) expect(mayStartIn(occupied, b.start[0]!, b.last[0]!)).toBe(true);
            // A block no prefix starts in, within one /20: told so, with no search.
            const inOne = b.start[0]! >>> 12 === b.last[0]! >>> 12;
            const granule = (b.start[0]! >>> 12) << 12;
            let near = false;
            for (let i = 0; i < t.count; i++) if (t.words[i]! >>> 12 === granule >>> 12) near = true;
            if (inOne && !near) expect(mayStartIn(occupied, b.start[0]!, b.last[0]!)).toBe(false);
          }
          expect(occupancyOf(parsePrefixTexts(["2a00::/32"]).v6)).toBeNull();
        },
      ),
      { numRuns: 200 },
    );
  });
});
