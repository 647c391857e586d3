import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { aggregatePrefixes, canonicalCidr, DEFAULT_EXCLUDE_PREFIXES, excludeRanges, filterMinLength, removeBogons } from "./index.js";
import { addressSet, blockSize, byAddress, fromText, key, type P, slot, smallPrefix, text } from "./small-space.test-helper.js";
import { byStart, keyOfText, rangeKeys, widePrefix, wideRange, wideText } from "./whole-space.test-helper.js";

/** Maximal aligned blocks inside `set` and inside `within`: the fewest CIDRs of that part. */
function coverWithin(set: Uint8Array, within: P): P[] {
  const out: P[] = [];
  const inside = (off: number, size: number) => {
    for (let a = off; a < off + size; a++) if (!set[slot(within.fam, a)]) return false;
    return true;
  };
  const walk = (off: number, len: number) => {
    const size = blockSize({ fam: within.fam, len });
    if (inside(off, size)) out.push({ fam: within.fam, off, len });
    else if (size > 1) {
      walk(off, len + 1);
      walk(off + size / 2, len + 1);
    }
  };
  walk(within.off, within.len);
  return out;
}

const prefixArb = smallPrefix();

describe("excludeRanges", () => {
  it("exclude - keeps the rest of a prefix as the fewest CIDRs around the hole", () => {
    expect(excludeRanges(["10.0.0.0/8"], ["10.0.0.0/9"])).toEqual({ prefixes: ["10.128.0.0/9"], dropped: 0, cut: 1 });
    expect(excludeRanges(["10.0.0.0/22"], ["10.0.1.0/24"])).toEqual({
      prefixes: ["10.0.0.0/24", "10.0.2.0/23"],
      dropped: 0,
      cut: 1,
    });
    expect(excludeRanges(["::/0"], ["::/1"]).prefixes).toEqual(["8000::/1"]);
  });

  it("exclude - drops prefixes inside a hole and keeps those outside untouched", () => {
    expect(excludeRanges(["192.168.1.0/24", "8.8.8.0/24", "2001:db8:1::/48"], ["192.168.0.0/16", "2001:db8::/32"])).toEqual({
      prefixes: ["8.8.8.0/24"],
      dropped: 2,
      cut: 0,
    });
  });

  it("exclude - counts distinct input prefixes once and returns them sorted", () => {
    const result = excludeRanges(["10.0.0.0/8", "10.0.0.0/8", "1.0.0.0/8", "10.128.0.0/9"], ["10.0.0.0/9"]);
    expect(result).toEqual({ prefixes: ["1.0.0.0/8", "10.128.0.0/9"], dropped: 0, cut: 1 });
  });

  it("exclude - holes at both ends of the address space", () => {
    expect(excludeRanges(["0.0.0.0/0"], ["0.0.0.0/8", "240.0.0.0/4"]).prefixes).toEqual(
      aggregatePrefixes([
        "1.0.0.0/8",
        "2.0.0.0/7",
        "4.0.0.0/6",
        "8.0.0.0/5",
        "16.0.0.0/4",
        "32.0.0.0/3",
        "64.0.0.0/2",
        "128.0.0.0/2",
        "192.0.0.0/3",
        "224.0.0.0/4",
      ]),
    );
  });

  it("exclude - covers exactly the set difference, each prefix cut on its own (model)", () => {
    fc.assert(
      fc.property(fc.array(prefixArb, { maxLength: 25 }), fc.array(prefixArb, { maxLength: 6 }), (inputs, holes) => {
        const result = excludeRanges(inputs.map(text), holes.map(text));
        const out = result.prefixes.map(fromText);
        const holeSet = addressSet(holes);
        const rest = addressSet(inputs).map((v, a) => (v && !holeSet[a] ? 1 : 0));
        expect(addressSet(out)).toEqual(rest);

        const distinct = [...new Map(inputs.map((p) => [key(p), p])).values()];
        const want = new Map<string, P>();
        let dropped = 0;
        let cut = 0;
        for (const p of distinct) {
          const mine = addressSet([p]).map((v, a) => (v && !holeSet[a] ? 1 : 0));
          const pieces = coverWithin(mine, p);
          if (pieces.length === 0) dropped++;
          else if (pieces.length > 1 || pieces[0]!.len !== p.len) cut++;
          for (const piece of pieces) want.set(key(piece), piece);
        }
        expect(out).toEqual([...want.values()].sort(byAddress));
        expect({ dropped: result.dropped, cut: result.cut }).toEqual({ dropped, cut });
      }),
      { numRuns: 1000 },
    );
  });
});

describe("excludeRanges - across the whole address space", () => {
  // The whole address space, against a bigint model.
  it("exclude - agrees with a bigint model of each prefix minus the holes", () => {
    fc.assert(
      fc.property(fc.array(widePrefix, { maxLength: 8 }), fc.array(widePrefix, { maxLength: 4 }), (inputs, holes) => {
        const result = excludeRanges(inputs.map(wideText), holes.map(wideText));
        const want = new Set<string>();
        for (const p of inputs) {
          const [s, e] = wideRange(p);
          const cuts = holes
            .filter((h) => h.fam === p.fam)
            .map(wideRange)
            .sort(byStart);
          let cursor = s;
          for (const [hs, he] of cuts) {
            if (he < cursor || hs > e) continue;
            if (hs > cursor) for (const c of rangeKeys(p.fam, cursor, hs - 1n)) want.add(c);
            cursor = he + 1n > cursor ? he + 1n : cursor;
          }
          if (cursor <= e) for (const c of rangeKeys(p.fam, cursor, e)) want.add(c);
        }
        const got = result.prefixes.map(keyOfText);
        expect(new Set(got)).toEqual(want);
        expect(got.length).toBe(want.size);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("filterMinLength and removeBogons", () => {
  it("filterMinLength - drops prefixes shorter than the family's minimum", () => {
    expect(filterMinLength(["0.0.0.0/0", "1.0.0.0/8", "2.0.0.0/7", "::/0", "2000::/3", "2001:db8::/16"])).toEqual({
      prefixes: ["1.0.0.0/8", "2001::/16"].map((p) => canonicalCidr(p, { mode: "mask" })),
      dropped: 4,
      cut: 0,
    });
    expect(filterMinLength(["1.0.0.0/8", "1.2.0.0/16"], { v4: 12 }).prefixes).toEqual(["1.2.0.0/16"]);
  });

  it("removeBogons - drops /0, private and documentation space, cuts around it", () => {
    const result = removeBogons(["0.0.0.0/0", "::/0", "10.1.0.0/16", "192.0.2.0/24", "8.8.8.0/24", "2001:db8::/48", "2001:db8::/31", "3fff::/16"]);
    expect(result.prefixes).toEqual(["8.8.8.0/24", "2001:db9::/32", "3fff:1000::/20", "3fff:2000::/19", "3fff:4000::/18", "3fff:8000::/17"]);
    expect(result).toMatchObject({ dropped: 5, cut: 2 });
  });

  it("removeBogons - takes the exclusion list and minimums from the options", () => {
    const result = removeBogons(["10.0.0.0/8", "1.0.0.0/24"], { exclude: [], minLengthV4: 16 });
    expect(result).toEqual({ prefixes: ["1.0.0.0/24"], dropped: 1, cut: 0 });
  });

  it("DEFAULT_EXCLUDE_PREFIXES - canonical, sorted, and covering the required ranges", () => {
    expect(DEFAULT_EXCLUDE_PREFIXES.map((p) => canonicalCidr(p))).toEqual(DEFAULT_EXCLUDE_PREFIXES);
    expect(excludeRanges(DEFAULT_EXCLUDE_PREFIXES, []).prefixes).toEqual(DEFAULT_EXCLUDE_PREFIXES); // sorted, distinct
    const named = [
      "10.0.0.0/8",
      "172.16.0.0/12",
      "192.168.0.0/16",
      "100.64.0.0/10",
      "127.0.0.0/8",
      "::1/128",
      "169.254.0.0/16",
      "fe80::/10",
      "fc00::/7",
      "224.0.0.0/4",
      "ff00::/8",
      "192.0.2.0/24",
      "198.51.100.0/24",
      "203.0.113.0/24",
      "2001:db8::/32",
    ];
    expect(excludeRanges(named, DEFAULT_EXCLUDE_PREFIXES)).toMatchObject({ prefixes: [], dropped: named.length });
  });
});
