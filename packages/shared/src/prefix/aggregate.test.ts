import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { aggregatePrefixes, parseCidr } from "./index.js";
import { PrefixList } from "./prefix-list.js";
import { mergedOrder, sortOrder } from "./sort.js";

// A small model space: 10.0.0.0/24 and 2001:db8::/120, 256 addresses each, so a model can
// list every address. A model prefix is its family, its offset in the space and its length.
type Fam = 4 | 6;
interface P {
  fam: Fam;
  off: number;
  len: number;
}
const BASE_LEN = { 4: 24, 6: 120 } as const;
const blockSize = (p: { fam: Fam; len: number }) => 2 ** (BASE_LEN[p.fam] + 8 - p.len);

function text(p: P, hostBits = 0): string {
  const at = p.off + (hostBits % blockSize(p));
  return p.fam === 4 ? `10.0.0.${at}/${p.len}` : `2001:db8::${at.toString(16)}/${p.len}`;
}

/** Reads canonical output text of the model space (anything else fails the test). */
function fromText(t: string): P {
  const v4 = /^10\.0\.0\.(\d+)\/(\d+)$/.exec(t);
  if (v4) return { fam: 4, off: Number(v4[1]), len: Number(v4[2]) };
  const v6 = /^2001:db8::([0-9a-f]*)\/(\d+)$/.exec(t);
  if (v6) return { fam: 6, off: v6[1] === "" ? 0 : Number.parseInt(v6[1]!, 16), len: Number(v6[2]) };
  throw new Error(`not canonical text of the model space: ${t}`);
}

const slot = (fam: Fam, off: number) => (fam === 4 ? off : 256 + off);

function addressSet(ps: readonly P[]): Uint8Array {
  const set = new Uint8Array(512);
  for (const p of ps) for (let a = p.off; a < p.off + blockSize(p); a++) set[slot(p.fam, a)] = 1;
  return set;
}

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

const prefixArb: fc.Arbitrary<{ p: P; hostBits: number }> = fc
  .record({ fam: fc.constantFrom<Fam>(4, 6), rel: fc.integer({ min: 0, max: 8 }), x: fc.nat(255), hostBits: fc.nat(255) })
  .map(({ fam, rel, x, hostBits }) => {
    const len = BASE_LEN[fam] + rel;
    const size = blockSize({ fam, len });
    return { p: { fam, off: x - (x % size), len }, hostBits: hostBits % 4 === 0 ? hostBits : 0 };
  });

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

  // Whole address space, with words and lengths chosen near 32-bit word edges, against an
  // interval model on bigint: catches carries and masks that the small space cannot reach.
  const word = fc.oneof(fc.constantFrom(0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff), fc.nat(0xffffffff));
  const edgeLen = (max: number) =>
    fc.oneof(
      fc.constantFrom(0, 1, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128).map((l) => Math.min(l, max)),
      fc.nat(max),
    );
  const wide = fc.oneof(
    fc.record({ fam: fc.constant<Fam>(4), words: fc.array(word, { minLength: 1, maxLength: 1 }), len: edgeLen(32) }),
    fc.record({ fam: fc.constant<Fam>(6), words: fc.array(word, { minLength: 4, maxLength: 4 }), len: edgeLen(128) }),
  );
  const bits = (fam: Fam) => (fam === 4 ? 32n : 128n);
  const bigintOf = (words: readonly number[]) => words.reduce((v, w) => (v << 32n) | BigInt(w), 0n);
  function wideText(fam: Fam, words: readonly number[], len: number): string {
    if (fam === 4) return `${[24, 16, 8, 0].map((s) => (words[0]! >>> s) & 255).join(".")}/${len}`;
    return `${words.flatMap((w) => [(w >>> 16).toString(16), (w & 0xffff).toString(16)]).join(":")}/${len}`;
  }
  function modelAggregate(inputs: readonly { fam: Fam; words: number[]; len: number }[]): string[] {
    const out: string[] = [];
    for (const fam of [4, 6] as const) {
      const B = bits(fam);
      const ranges = inputs
        .filter((i) => i.fam === fam)
        .map((i) => {
          const host = (1n << (B - BigInt(i.len))) - 1n;
          const start = bigintOf(i.words) & ~host;
          return [start, start | host] as const;
        })
        .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
      const merged: [bigint, bigint][] = [];
      for (const [s, e] of ranges) {
        const last = merged.at(-1);
        if (!last || s > last[1] + 1n) merged.push([s, e]);
        else if (e > last[1]) last[1] = e;
      }
      for (let [s, e] of merged) {
        while (s <= e) {
          let k = B;
          while (k > 0n && (s % (1n << k) !== 0n || s + (1n << k) - 1n > e)) k--;
          out.push(`${fam}|${s}|${B - k}`);
          s += 1n << k;
        }
      }
    }
    return out;
  }

  it("aggregate - agrees with a bigint interval model across the whole address space", () => {
    fc.assert(
      fc.property(fc.array(wide, { maxLength: 12 }), (inputs) => {
        const out = aggregatePrefixes(inputs.map((i) => wideText(i.fam, i.words, i.len))).map((t) => {
          const p = parseCidr(t);
          return `${p.family}|${bigintOf(Array.from(p.words))}|${p.length}`;
        });
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
      fc.property(fc.array(run, { minLength: 1, maxLength: 16 }), fc.boolean(), (runs, v4) => {
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
});
