import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { aggregatePrefixes, canonicalCidr, DEFAULT_EXCLUDE_PREFIXES, excludeRanges, filterMinLength, parseCidr, removeBogons } from "./index.js";

// The small model space of aggregate.test.ts: 10.0.0.0/24 and 2001:db8::/120.
type Fam = 4 | 6;
interface P {
  fam: Fam;
  off: number;
  len: number;
}
const BASE_LEN = { 4: 24, 6: 120 } as const;
const blockSize = (p: { fam: Fam; len: number }) => 2 ** (BASE_LEN[p.fam] + 8 - p.len);
const text = (p: P) => (p.fam === 4 ? `10.0.0.${p.off}/${p.len}` : `2001:db8::${p.off.toString(16)}/${p.len}`);
const key = (p: P) => `${p.fam}|${p.off}|${p.len}`;
const byAddress = (a: P, b: P) => a.fam - b.fam || a.off - b.off || a.len - b.len;

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

const prefixArb: fc.Arbitrary<P> = fc
  .record({ fam: fc.constantFrom<Fam>(4, 6), rel: fc.integer({ min: 0, max: 8 }), x: fc.nat(255) })
  .map(({ fam, rel, x }) => {
    const len = BASE_LEN[fam] + rel;
    const size = blockSize({ fam, len });
    return { fam, off: x - (x % size), len };
  });

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
  // Words and lengths near 32-bit word edges, against a bigint model: catches borrows and
  // carries between words that the small space cannot reach.
  const word = fc.oneof(fc.constantFrom(0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff), fc.nat(0xffffffff));
  const len6 = fc.oneof(fc.constantFrom(0, 1, 31, 32, 33, 63, 64, 65, 95, 96, 97, 127, 128), fc.nat(128));
  const wide = fc.oneof(
    fc.record({ fam: fc.constant<Fam>(4), words: fc.array(word, { minLength: 1, maxLength: 1 }), len: fc.nat(32) }),
    fc.record({ fam: fc.constant<Fam>(6), words: fc.array(word, { minLength: 4, maxLength: 4 }), len: len6 }),
  );
  type Wide = { fam: Fam; words: number[]; len: number };
  const B = (fam: Fam) => (fam === 4 ? 32n : 128n);
  const bigintOf = (words: readonly number[]) => words.reduce((v, w) => (v << 32n) | BigInt(w), 0n);
  const range = (p: Wide) => {
    const host = (1n << (B(p.fam) - BigInt(p.len))) - 1n;
    const start = bigintOf(p.words) & ~host;
    return [start, start | host] as const;
  };
  const wideText = (p: Wide) =>
    p.fam === 4
      ? `${[24, 16, 8, 0].map((sh) => (p.words[0]! >>> sh) & 255).join(".")}/${p.len}`
      : `${p.words.flatMap((w) => [(w >>> 16).toString(16), (w & 0xffff).toString(16)]).join(":")}/${p.len}`;
  const cidrs = (fam: Fam, s: bigint, e: bigint, out: string[] = []) => {
    while (s <= e) {
      let k = B(fam);
      while (k > 0n && (s % (1n << k) !== 0n || s + (1n << k) - 1n > e)) k--;
      out.push(`${fam}|${s}|${B(fam) - k}`);
      s += 1n << k;
    }
    return out;
  };

  it("exclude - agrees with a bigint model of each prefix minus the holes", () => {
    fc.assert(
      fc.property(fc.array(wide, { maxLength: 8 }), fc.array(wide, { maxLength: 4 }), (inputs, holes) => {
        const result = excludeRanges(inputs.map(wideText), holes.map(wideText));
        const want = new Set<string>();
        for (const p of inputs) {
          const [s, e] = range(p);
          const cuts = holes
            .filter((h) => h.fam === p.fam)
            .map(range)
            .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
          let cursor = s;
          for (const [hs, he] of cuts) {
            if (he < cursor || hs > e) continue;
            if (hs > cursor) for (const c of cidrs(p.fam, cursor, hs - 1n)) want.add(c);
            cursor = he + 1n > cursor ? he + 1n : cursor;
          }
          if (cursor <= e) for (const c of cidrs(p.fam, cursor, e)) want.add(c);
        }
        const got = result.prefixes.map((t) => {
          const q = parseCidr(t);
          return `${q.family}|${bigintOf(Array.from(q.words))}|${q.length}`;
        });
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
