import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { aggregatePrefixes } from "./index.js";
import { PrefixList } from "./prefix-list.js";
import { addressSet, BASE_LEN, blockSize, fromText, type P, slot, smallPrefix, text } from "./small-space.test-helper.js";
import { mergedOrder, sortedDistinct, sortOrder } from "./sort.js";
import { byStart, keyOfText, rangeKeys, type Wide, widePrefix, wideRange, wideText } from "./whole-space.test-helper.js";

/** Every maximal aligned block inside the set: the unique minimal CIDR cover. */
function minimalCover(set: Uint8Array): P[] {
  const out: P[] = [];
  for (const fam of [4, 6] as const) {
    for (let off = 0; off < 256; ) {
      if (!set[slot(fam, off)]) {
        off++;
        continue;
      }
      let len = BASE_LEN[fam] + 8;
      for (;;) {
        const parent = { fam, len: len - 1 };
        const size = blockSize(parent);
        if (len === BASE_LEN[fam] || off % size !== 0) break;
        let full = true;
        for (let a = off; a < off + size; a++) full &&= set[slot(fam, a)] === 1;
        if (!full) break;
        len--;
      }
      out.push({ fam, off, len });
      off += blockSize({ fam, len });
    }
  }
  return out;
}

// A prefix of the small space, some with host bits set.
const prefixArb: fc.Arbitrary<{ p: P; hostBits: number }> = fc
  .tuple(smallPrefix(), fc.nat(255))
  .map(([p, hostBits]) => ({ p, hostBits: hostBits % 4 === 0 ? hostBits : 0 }));

describe("aggregatePrefixes - examples", () => {
  it("aggregate - joins siblings, drops contained prefixes and duplicates", () => {
    expect(aggregatePrefixes(["10.0.0.0/24", "10.0.1.0/24", "10.0.1.0/24", "10.0.0.128/25"])).toEqual(["10.0.0.0/23"]);
  });

  it("aggregate - keeps prefixes that touch but are not siblings apart", () => {
    expect(aggregatePrefixes(["10.0.1.0/24", "10.0.2.0/24"])).toEqual(["10.0.1.0/24", "10.0.2.0/24"]);
  });

  it("aggregate - sorts IPv4 first, then IPv6, each by address", () => {
    expect(aggregatePrefixes(["2001:db8::/48", "192.0.2.0/24", "::1", "10.0.0.0/8"])).toEqual(["10.0.0.0/8", "192.0.2.0/24", "::1/128", "2001:db8::/48"]);
  });

  it("aggregate - reaches /0 and the last address without overflow", () => {
    expect(aggregatePrefixes(["0.0.0.0/1", "128.0.0.0/1", "1.2.3.4"])).toEqual(["0.0.0.0/0"]);
    expect(aggregatePrefixes(["::/1", "8000::/1"])).toEqual(["::/0"]);
    expect(aggregatePrefixes(["255.255.255.255", "255.255.255.254/32"])).toEqual(["255.255.255.254/31"]);
    expect(aggregatePrefixes(["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe"])).toEqual([
      "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127",
    ]);
  });

  it("aggregate - carries across IPv6 32-bit words", () => {
    expect(aggregatePrefixes(["::ffff:ffff/128", "::1:0:0/128"])).toEqual(["::ffff:ffff/128", "::1:0:0/128"]);
    expect(aggregatePrefixes(["::/97", "::8000:0/97"])).toEqual(["::/96"]);
    expect(aggregatePrefixes(["0:0:0:1::/64", "0:0:0:0:ffff:ffff:ffff:ffff/128"])).toEqual(["::ffff:ffff:ffff:ffff/128", "0:0:0:1::/64"]);
  });

  it("aggregate - clears host bits and canonicalises", () => {
    expect(aggregatePrefixes(["10.0.0.1/24", "2001:DB8:0::1/64"])).toEqual(["10.0.0.0/24", "2001:db8::/64"]);
  });

  it("aggregate - throws on text that is not a prefix", () => {
    expect(() => aggregatePrefixes(["10.0.0.0/8", "nope"])).toThrow('"nope" is not an IP prefix');
    expect(aggregatePrefixes([])).toEqual([]);
  });
});

describe("aggregatePrefixes - properties against a brute-force model", () => {
  it("aggregate - covers exactly the input addresses and equals the minimal cover", () => {
    fc.assert(
      fc.property(fc.array(prefixArb, { maxLength: 40 }), (inputs) => {
        const out = aggregatePrefixes(inputs.map(({ p, hostBits }) => text(p, hostBits))).map(fromText);
        const want = addressSet(inputs.map((i) => i.p));
        expect(addressSet(out)).toEqual(want);
        expect(out).toEqual(minimalCover(want));
        for (let k = 1; k < out.length; k++) {
          const a = out[k - 1]!;
          const b = out[k]!;
          if (a.fam !== b.fam) continue;
          expect(a.off + blockSize(a)).toBeLessThanOrEqual(b.off); // sorted, no overlap, no nesting
          const siblings = a.len === b.len && a.off % (2 * blockSize(a)) === 0 && a.off + blockSize(a) === b.off;
          expect(siblings).toBe(false);
        }
      }),
      { numRuns: 1000 },
    );
  });

  it("aggregate - agrees with the model on inputs large enough for the radix sort", () => {
    fc.assert(
      fc.property(fc.array(prefixArb, { minLength: 2100, maxLength: 3000 }), (inputs) => {
        const out = aggregatePrefixes(inputs.map(({ p }) => text(p))).map(fromText);
        expect(out).toEqual(minimalCover(addressSet(inputs.map((i) => i.p))));
      }),
      { numRuns: 20 },
    );
  });

  // The whole address space, against an interval model on bigint.
  function modelAggregate(inputs: readonly Wide[]): string[] {
    const out: string[] = [];
    for (const fam of [4, 6] as const) {
      const ranges = inputs
        .filter((i) => i.fam === fam)
        .map(wideRange)
        .sort(byStart);
      const merged: [bigint, bigint][] = [];
      for (const [s, e] of ranges) {
        const last = merged.at(-1);
        if (!last || s > last[1] + 1n) merged.push([s, e]);
        else if (e > last[1]) last[1] = e;
      }
      for (const [s, e] of merged) rangeKeys(fam, s, e, out);
    }
    return out;
  }

  it("aggregate - agrees with a bigint interval model across the whole address space", () => {
    fc.assert(
      fc.property(fc.array(widePrefix, { maxLength: 12 }), (inputs) => {
        const out = aggregatePrefixes(inputs.map(wideText)).map(keyOfText);
        expect(out).toEqual(modelAggregate(inputs));
      }),
      { numRuns: 1000 },
    );
  });
});

describe("sortOrder", () => {
  it("sort - leaves a list that is in order as it is", () => {
    const list = new PrefixList(4, 3000);
    for (let i = 0; i < 3000; i++) list.push(Uint32Array.of(Math.floor(i / 2)), 0, 24 + (i % 2));
    expect(Array.from(sortOrder(list))).toEqual(Array.from({ length: 3000 }, (_, i) => i));
  });

  const entry = fc.record({ words: fc.array(fc.constantFrom(0, 1, 0xffff, 0x10000, 0xffffffff), { minLength: 4, maxLength: 4 }), len: fc.nat(128) });

  it("sort - the radix sort orders like a comparison sort, stable among equals", () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 2048, maxLength: 2600 }), fc.boolean(), (entries, byLength) => {
        const list = new PrefixList(6, entries.length);
        for (const e of entries) list.push(Uint32Array.from(e.words), 0, e.len);
        const want = entries
          .map((e, i) => ({ ...e, i }))
          .sort((a, b) => {
            for (let w = 0; w < 4; w++) if (a.words[w] !== b.words[w]) return a.words[w]! - b.words[w]!;
            return (byLength ? a.len - b.len : 0) || a.i - b.i;
          })
          .map((e) => e.i);
        expect(Array.from(sortOrder(list, byLength))).toEqual(want);
      }),
      { numRuns: 20 },
    );
  });

  it("sort - mergedOrder of runs in order equals sortOrder", () => {
    const run = fc.array(entry, { maxLength: 250 }).map((es) =>
      es.sort((a, b) => {
        for (let w = 0; w < 4; w++) if (a.words[w] !== b.words[w]) return a.words[w]! - b.words[w]!;
        return a.len - b.len;
      }),
    );
    fc.assert(
      fc.property(fc.array(run, { minLength: 1, maxLength: 40 }), fc.boolean(), (runs, v4) => {
        const list = new PrefixList(v4 ? 4 : 6, 16);
        const starts: number[] = [];
        for (const r of runs) {
          starts.push(list.count);
          // IPv4 keeps the first word (and a length that fits); the runs stay in order.
          const sorted = v4 ? [...r].sort((a, b) => a.words[0]! - b.words[0]! || a.len - b.len) : r;
          for (const e of sorted) list.push(Uint32Array.from(e.words), 0, v4 ? Math.min(e.len, 32) : e.len);
        }
        expect(Array.from(mergedOrder(list, starts))).toEqual(Array.from(sortOrder(list)));
      }),
      { numRuns: 100 },
    );
  });

  it("sort - sortedDistinct is the sorted distinct prefixes, each with a source text when a copy had one", () => {
    fc.assert(
      fc.property(fc.array(fc.record({ e: entry, src: fc.integer({ min: -1, max: 5 }) }), { maxLength: 3000 }), fc.boolean(), (rows, v4) => {
        const list = new PrefixList(v4 ? 4 : 6, 16);
        const src = list.trackSource(["a", "b", "c", "d", "e", "f"]);
        for (const { e, src: s } of rows) {
          list.push(Uint32Array.from(e.words), 0, v4 ? Math.min(e.len, 32) : e.len);
          list.src![list.count - 1] = s;
        }
        void src;
        const W = v4 ? 1 : 4;
        const keyAt = (l: PrefixList, i: number) =>
          [...l.words.subarray(i * W, i * W + W)].map((w) => w.toString(16).padStart(8, "0")).join("") + String(l.lens[i]).padStart(3, "0");
        const model = new Map<string, boolean>();
        for (let i = 0; i < list.count; i++) model.set(keyAt(list, i), (model.get(keyAt(list, i)) ?? false) || list.src![i]! >= 0);
        const out = sortedDistinct(list);
        const got = Array.from({ length: out.count }, (_, i) => [keyAt(out, i), out.src![i]! >= 0]);
        expect(got).toEqual([...model].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
        for (let i = 0; i < out.count; i++) if (out.src![i]! >= 0) expect(list.src!.subarray(0, list.count).includes(out.src![i]!)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });
});
