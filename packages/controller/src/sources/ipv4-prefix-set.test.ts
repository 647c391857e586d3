// Ipv4PrefixSet against a Set of the pairs' texts: the same answers to every add, made at any
// size (a feed's parse makes it at the size its length suggests) and grown past it.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Ipv4PrefixSet } from "./ipv4-prefix-set.js";

describe("Ipv4PrefixSet", () => {
  it("answers each add as a set of the pairs does, whatever size it is made at", () => {
    // Few networks and lengths, so that repeats are common; enough adds to grow a small table.
    const pair = fc.tuple(
      fc.integer({ min: 0, max: 3000 }).map((n) => (n * 256) >>> 0),
      fc.integer({ min: 8, max: 32 }),
    );
    fc.assert(
      fc.property(fc.array(pair, { maxLength: 3000 }), fc.constantFrom(0, 1, 500, 1023, 1024, 5000), (adds, expected) => {
        const set = new Ipv4PrefixSet(expected);
        const model = new Set<string>();
        for (const [network, length] of adds) {
          const key = `${network}/${length}`;
          expect(set.add(network, length)).toBe(!model.has(key));
          model.add(key);
        }
        expect(set.size).toBe(model.size);
      }),
      { numRuns: 200 },
    );
  });
});
