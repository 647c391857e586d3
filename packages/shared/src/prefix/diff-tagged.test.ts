import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { aggregatePrefixes, diffTagged, PrefixError, type TaggedPrefix } from "./index.js";

const tagged = (prefix: string, ...communities: string[]): TaggedPrefix => ({ prefix, communities });

describe("diffTagged - examples", () => {
  it("diffTagged - lists added, removed and changed prefixes", () => {
    const from = [tagged("10.0.0.0/8", "65000:1"), tagged("192.0.2.0/24", "65000:1"), tagged("2001:db8::/32", "65000:2")];
    const to = [tagged("10.0.0.0/8", "65000:2"), tagged("198.51.100.0/24", "65000:1"), tagged("2001:db8::/32", "65000:2")];
    expect(diffTagged(from, to)).toEqual({
      added: [to[1]],
      removed: [from[1]],
      changed: [{ prefix: "10.0.0.0/8", from_communities: ["65000:1"], to_communities: ["65000:2"] }],
    });
  });

  it("diffTagged - compares communities as sets", () => {
    const diff = diffTagged([tagged("10.0.0.0/8", "65000:2", "65000:1")], [tagged("10.0.0.0/8", "65000:1", "65000:2", "65000:1")]);
    expect(diff.changed).toEqual([]);
  });

  it("diffTagged - tells a prefix from a longer one at the same address, and IPv4 from IPv6", () => {
    const diff = diffTagged([tagged("10.0.0.0/8"), tagged("::/0")], [tagged("0.0.0.0/0"), tagged("10.0.0.0/16")]);
    expect(diff.removed.map((t) => t.prefix)).toEqual(["10.0.0.0/8", "::/0"]);
    expect(diff.added.map((t) => t.prefix)).toEqual(["0.0.0.0/0", "10.0.0.0/16"]);
  });

  it("diffTagged - refuses a list that is not sorted", () => {
    const unsorted = [tagged("10.0.0.0/16"), tagged("10.0.0.0/8")];
    expect(() => diffTagged(unsorted, [])).toThrow(PrefixError);
    expect(() => diffTagged([], [tagged("::/0"), tagged("10.0.0.0/8")])).toThrow("not sorted");
    expect(() => diffTagged([tagged("10.0.0.0/8"), tagged("10.0.0.0/8")], [])).toThrow("not sorted");
  });

  it("diffTagged - handles empty lists", () => {
    expect(diffTagged([], [])).toEqual({ added: [], removed: [], changed: [] });
    expect(diffTagged([tagged("10.0.0.0/8")], []).removed).toHaveLength(1);
  });
});

describe("diffTagged - against a Map model", () => {
  const POOL = ["65000:1", "65000:2", "65000:1:2"];
  const prefix = fc.oneof(
    fc.tuple(fc.nat(3), fc.nat(255), fc.integer({ min: 22, max: 32 })).map(([a, b, len]) => `10.${a}.${b}.0/${len}`),
    fc.tuple(fc.nat(0xffff), fc.integer({ min: 16, max: 128 })).map(([g, len]) => `2001:db8:${g.toString(16)}::/${len}`),
  );
  // Distinct canonical prefixes, sorted by a bigint key computed apart from the library.
  const list = fc.array(fc.tuple(prefix, fc.subarray(POOL)), { maxLength: 40 }).map((entries) => {
    const byCanonical = new Map<string, string[]>();
    for (const [p, communities] of entries) byCanonical.set(aggregatePrefixes([p])[0]!, communities);
    return [...byCanonical].map(([p, communities]) => tagged(p, ...communities)).sort(byKey);
  });
  const inPoolOrder = (cs: string[]) => POOL.filter((c) => cs.includes(c));

  it("diffTagged - agrees with a Map-based diff", () => {
    fc.assert(
      fc.property(list, list, (a, b) => {
        // Half the time, the second list is the first one edited, so most prefixes match.
        const from = a;
        const to = b.length % 2 === 0 ? [...new Map([...a, ...b].map((t) => [t.prefix, t])).values()].sort(byKey) : b;
        const fromMap = new Map(from.map((t) => [t.prefix, t]));
        const toMap = new Map(to.map((t) => [t.prefix, t]));
        const diff = diffTagged(from, to);
        expect(diff.added).toEqual(to.filter((t) => !fromMap.has(t.prefix)));
        expect(diff.removed).toEqual(from.filter((t) => !toMap.has(t.prefix)));
        const changed = to.flatMap((t) => {
          const before = fromMap.get(t.prefix);
          if (!before) return [];
          const x = inPoolOrder(before.communities);
          const y = inPoolOrder(t.communities);
          return x.join() === y.join() ? [] : [{ prefix: t.prefix, from_communities: x, to_communities: y }];
        });
        expect(diff.changed).toEqual(changed);
      }),
      { numRuns: 500 },
    );
  });
});

/** Family, then address, then length, computed independently of the library with bigint. */
function byKey(x: TaggedPrefix, y: TaggedPrefix): number {
  const k = (t: TaggedPrefix) => {
    const [addr, len] = t.prefix.split("/") as [string, string];
    if (!addr.includes(":")) return [4n, addr.split(".").reduce((v, o) => (v << 8n) | BigInt(o), 0n), BigInt(len)] as const;
    const [head, tail = ""] = addr.split("::") as [string, string?];
    const h = head ? head.split(":") : [];
    const t2 = tail ? tail.split(":") : [];
    const groups = addr.includes("::") ? [...h, ...Array(8 - h.length - t2.length).fill("0"), ...t2] : h;
    return [6n, groups.reduce((v, g) => (v << 16n) | BigInt(`0x${g}`), 0n), BigInt(len)] as const;
  };
  const a = k(x);
  const b = k(y);
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return 0;
}
