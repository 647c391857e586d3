import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  aggregateTagged,
  aggregateTaggedColumns,
  aggregateTaggedLists,
  compareCommunities,
  parsePrefixList,
  sortedDistinct,
  type TaggedInput,
  type TaggedPrefix,
} from "./index.js";
import { BASE_LEN, blockSize, byAddress, contains, type Fam, fromText, key, type P, smallPrefix, text } from "./small-space.test-helper.js";

interface Module {
  prefixes: P[];
  communities: string[];
}
interface Tagged {
  p: P;
  communities: string[];
}

/** Standard communities before large ones, then numerically: the model's own order. */
const modelOrder = (a: string, b: string) => {
  const x = a.split(":").map(Number);
  const y = b.split(":").map(Number);
  if (x.length !== y.length) return x.length - y.length;
  for (let k = 0; k < x.length; k++) if (x[k] !== y[k]) return x[k]! - y[k]!;
  return 0;
};
const sortedSet = (s: Iterable<string>) => [...new Set(s)].sort(modelOrder);
const sameSet = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((c, k) => c === b[k]);

/** The unique minimal cover of the addresses of `ps`: every maximal aligned block. */
function aggregateModel(ps: readonly P[]): P[] {
  const out: P[] = [];
  for (const fam of [4, 6] as const) {
    const inside = (off: number, len: number) =>
      ps.some((q) => contains(q, { fam, off, len })) || (len < BASE_LEN[fam] + 8 && inside(off, len + 1) && inside(off + blockSize({ fam, len }) / 2, len + 1));
    const walk = (off: number, len: number) => {
      if (inside(off, len)) out.push({ fam, off, len });
      else if (len < BASE_LEN[fam] + 8) {
        walk(off, len + 1);
        walk(off + blockSize({ fam, len }) / 2, len + 1);
      }
    };
    walk(0, BASE_LEN[fam]);
  }
  return out;
}

/**
 * The revision procedure step by step, as slowly and plainly as it reads: (1) aggregate
 * each module; (2) announce each prefix of any result once, with the communities of every
 * module whose result covers it; (3) from the longest length to the shortest, repeated until
 * nothing changes: merge equal-community siblings into their parent, then drop prefixes whose
 * communities equal their nearest announced container's.
 */
function reference(modules: readonly Module[]): Tagged[] {
  const results = modules.map((m) => aggregateModel(m.prefixes));
  const announced = new Map<string, Tagged>();
  for (const result of results) {
    for (const p of result) {
      const communities = modules.flatMap((m, i) => (results[i]!.some((q) => contains(q, p)) ? m.communities : []));
      announced.set(key(p), { p, communities: sortedSet(communities) });
    }
  }
  const container = (p: P) => {
    for (let len = p.len - 1; len >= BASE_LEN[p.fam]; len--) {
      const size = blockSize({ fam: p.fam, len });
      const found = announced.get(key({ fam: p.fam, off: p.off - (p.off % size), len }));
      if (found) return found;
    }
    return undefined;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let len = 128; len >= 0; len--) {
      for (const t of [...announced.values()].filter((e) => e.p.len === len)) {
        const size = blockSize(t.p);
        if (!announced.has(key(t.p)) || len === BASE_LEN[t.p.fam] || t.p.off % (2 * size) !== 0) continue;
        const sibling = announced.get(key({ ...t.p, off: t.p.off + size }));
        if (!sibling || !sameSet(sibling.communities, t.communities)) continue;
        announced.delete(key(t.p));
        announced.delete(key(sibling.p));
        const parent = { fam: t.p.fam, off: t.p.off, len: len - 1 };
        announced.set(key(parent), { p: parent, communities: t.communities });
        changed = true;
      }
      for (const t of [...announced.values()].filter((e) => e.p.len === len)) {
        const c = container(t.p);
        if (c && sameSet(c.communities, t.communities)) {
          announced.delete(key(t.p));
          changed = true;
        }
      }
    }
  }
  return [...announced.values()].sort((a, b) => byAddress(a.p, b.p));
}

const POOL = ["65000:1", "65000:2", "65000:10", "65000:1:2"];
// IPv4 twice as often, and often near the start of the space, where the prefixes meet.
const prefixArb = smallPrefix(fc.constantFrom<Fam>(4, 4, 6), fc.oneof(fc.nat(255), fc.nat(15)));
const moduleArb = (max: number): fc.Arbitrary<Module> => fc.record({ prefixes: fc.array(prefixArb, { maxLength: max }), communities: fc.subarray(POOL) });

const run = (modules: readonly Module[]): Tagged[] =>
  aggregateTagged(modules.map((m) => ({ prefixes: m.prefixes.map(text), communities: m.communities }))).map((t) => ({
    p: fromText(t.prefix),
    communities: t.communities,
  }));

const tagged = (prefix: string, ...communities: string[]): TaggedPrefix => ({ prefix, communities });
/** A module's prefixes (one or a list) and its communities. */
const input = (prefixes: string | string[], ...communities: string[]): TaggedInput => ({ prefixes: [prefixes].flat(), communities });

describe("aggregateTagged - examples", () => {
  it("aggregateTagged - keeps the union of communities on a more-specific (/23 {X} and /24 {Y})", () => {
    const out = aggregateTagged([input("10.0.0.0/23", "X"), input("10.0.1.0/24", "Y")]);
    expect(out).toEqual([tagged("10.0.0.0/23", "X"), tagged("10.0.1.0/24", "X", "Y")]);
  });

  it("aggregateTagged - merges equal-community siblings from different modules", () => {
    const out = aggregateTagged([input("10.0.0.0/24", "65000:1"), input("10.0.1.0/24", "65000:1")]);
    expect(out).toEqual([tagged("10.0.0.0/23", "65000:1")]);
  });

  it("aggregateTagged - a wholly shadowed parent takes its merged children's communities", () => {
    const out = aggregateTagged([input("10.0.0.0/22", "65000:1"), input("10.0.0.0/23", "65000:2"), input("10.0.2.0/23", "65000:2")]);
    expect(out).toEqual([tagged("10.0.0.0/22", "65000:1", "65000:2")]);
  });

  it("aggregateTagged - drops a more-specific that adds no community", () => {
    const out = aggregateTagged([input("10.0.0.0/8", "65000:1"), input("10.1.0.0/16", "65000:1")]);
    expect(out).toEqual([tagged("10.0.0.0/8", "65000:1")]);
  });

  it("aggregateTagged - never splits a prefix to merge a neighbour", () => {
    // 10.0.1.0/24 {A,B} and 10.0.0.0/24 {A}: merging the /23 would need a split; both stay.
    const out = aggregateTagged([input("10.0.0.0/23", "A"), input(["10.0.1.0/24", "10.0.2.0/24"], "B")]);
    expect(out).toEqual([tagged("10.0.0.0/23", "A"), tagged("10.0.1.0/24", "A", "B"), tagged("10.0.2.0/24", "B")]);
  });

  it("aggregateTagged - keeps a module without communities, and both families apart", () => {
    const out = aggregateTagged([
      input(["192.0.2.0/25", "192.0.2.128/25", "2001:db8::/33", "2001:db8:8000::/33"]),
      input(["192.0.2.1", "2001:db8::1"], "65000:1"),
    ]);
    expect(out).toEqual([tagged("192.0.2.0/24"), tagged("192.0.2.1/32", "65000:1"), tagged("2001:db8::/32"), tagged("2001:db8::1/128", "65000:1")]);
  });

  it("aggregateTagged - sorts and de-duplicates communities, standard before large", () => {
    const out = aggregateTagged([input("10.0.0.0/8", "65000:100", "65000:1:2", "65000:20", "65000:20"), input("10.0.0.0/8", "64512:5")]);
    expect(out).toEqual([tagged("10.0.0.0/8", "64512:5", "65000:20", "65000:100", "65000:1:2")]);
    expect(["65000:1:2", "65000:100", "65000:20"].sort(compareCommunities)).toEqual(["65000:20", "65000:100", "65000:1:2"]);
  });

  it("aggregateTagged - shares one frozen communities array per set", () => {
    const out = aggregateTagged([input(["10.0.0.0/24", "10.2.0.0/24"], "65000:1"), input("10.0.0.1", "65000:2")]);
    expect(out.map((t) => t.prefix)).toEqual(["10.0.0.0/24", "10.0.0.1/32", "10.2.0.0/24"]);
    expect(out[0]!.communities).toBe(out[2]!.communities);
    expect(Object.isFrozen(out[1]!.communities)).toBe(true);
  });

  it("aggregateTagged - nothing in, nothing out", () => {
    expect(aggregateTagged([])).toEqual([]);
    expect(aggregateTagged([{ prefixes: [], communities: ["65000:1"] }])).toEqual([]);
  });
});

describe("aggregateTagged - properties against a brute-force model", () => {
  const inputs = fc.array(moduleArb(8), { minLength: 1, maxLength: 5 });

  it("aggregateTagged - covers exactly the union and tags each address with every covering module", () => {
    fc.assert(
      fc.property(inputs, (modules) => {
        // Per address: the union of the covering modules' communities, and the communities of
        // the longest covering output (outputs painted shortest first, so longer ones win).
        const want: (string[] | undefined)[] = Array(512);
        for (const m of modules) {
          for (const p of m.prefixes) {
            for (let a = p.off; a < p.off + blockSize(p); a++) {
              const at = (p.fam === 4 ? 0 : 256) + a;
              want[at] = sortedSet([...(want[at] ?? []), ...m.communities]);
            }
          }
        }
        const got: (string[] | undefined)[] = Array(512);
        for (const t of [...run(modules)].sort((x, y) => x.p.len - y.p.len)) {
          for (let a = t.p.off; a < t.p.off + blockSize(t.p); a++) got[(t.p.fam === 4 ? 0 : 256) + a] = t.communities;
        }
        expect(got.map((c) => c !== undefined)).toEqual(want.map((c) => c !== undefined)); // (a)
        expect(got).toEqual(want); // (b)
      }),
      { numRuns: 600 },
    );
  });

  it("aggregateTagged - never splits a prefix: each output is made of announced prefixes", () => {
    fc.assert(
      fc.property(inputs, (modules) => {
        const announced = modules.flatMap((m) => aggregateModel(m.prefixes));
        const out = run(modules);
        for (const t of out) {
          // (c) the announced prefixes inside the output prefix fill it exactly
          const parts = announced.filter((p) => contains(t.p, p));
          expect(aggregateModel(parts)).toEqual([t.p]);
          // and a prefix carries at least the communities of the output prefix around it
          const around = out.filter((c) => c !== t && contains(c.p, t.p)).sort((x, y) => y.p.len - x.p.len)[0];
          if (around) expect(around.communities.every((c) => t.communities.includes(c))).toBe(true);
        }
      }),
      { numRuns: 600 },
    );
  });

  it("aggregateTagged - equals the documented procedure run step by step", () => {
    fc.assert(
      fc.property(inputs, (modules) => {
        expect(run(modules)).toEqual(reference(modules)); // (d)
      }),
      { numRuns: 1000 },
    );
  });

  it("aggregateTagged - equals the procedure with hundreds of prefixes per module", () => {
    fc.assert(
      fc.property(fc.array(moduleArb(900), { minLength: 3, maxLength: 4 }), (modules) => {
        expect(run(modules)).toEqual(reference(modules));
      }),
      { numRuns: 8 },
    );
  });

  it("aggregateTaggedLists - the parsed lists, sorted and deduplicated or not, give aggregateTaggedColumns' columns", () => {
    fc.assert(
      fc.property(fc.array(moduleArb(40), { minLength: 1, maxLength: 20 }), fc.boolean(), (modules, sorted) => {
        const inputs = modules.map((m) => ({ prefixes: m.prefixes.map(text), communities: m.communities }));
        const want = aggregateTaggedColumns(inputs);
        const lists = inputs.map((input) => {
          const parsed = parsePrefixList(input.prefixes);
          return { communities: input.communities, v4: sorted ? sortedDistinct(parsed.v4) : parsed.v4, v6: sorted ? sortedDistinct(parsed.v6) : parsed.v6 };
        });
        const got = aggregateTaggedLists(lists);
        for (const fam of ["v4", "v6"] as const) {
          expect(got[fam].prefixes).toEqual(want[fam].prefixes);
          expect(got[fam].prefixes.map((_, k) => got.communities[got[fam].sets[k]!])).toEqual(
            want[fam].prefixes.map((_, k) => want.communities[want[fam].sets[k]!]),
          );
        }
      }),
      { numRuns: 500 },
    );
  });
});
