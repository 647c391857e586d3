import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  buildPrefixIndex,
  buildPrefixTableIndex,
  buildPrefixTextIndex,
  canonicalCidr,
  formatAddress,
  PrefixError,
  parseAddress,
  parsePrefixList,
} from "./index.js";

interface Item {
  prefix: string;
  id: number;
}

/** Family and value of an address text, by bigint, apart from the library. */
function value(address: string): [4 | 6, bigint] {
  if (!address.includes(":")) return [4, address.split(".").reduce((v, o) => (v << 8n) | BigInt(o), 0n)];
  const [head, tail = ""] = address.split("::") as [string, string?];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = address.includes("::") ? [...h, ...Array(8 - h.length - t.length).fill("0"), ...t] : h;
  return [6, groups.reduce((v, g) => (v << 16n) | BigInt(`0x${g}`), 0n)];
}

/** The addresses just before, at the first and last of, and just after `prefix`, within its family's space. */
function edgesOf(prefix: string): string[] {
  const [net, len] = prefix.split("/") as [string, string];
  const [family, v] = value(net);
  const bits = family === 4 ? 32 : 128;
  const last = v + (1n << BigInt(bits - Number(len))) - 1n;
  const max = (1n << BigInt(bits)) - 1n;
  const text = (x: bigint) =>
    family === 4
      ? [24n, 16n, 8n, 0n].map((s) => String((x >> s) & 255n)).join(".")
      : Array.from({ length: 8 }, (_, k) => ((x >> BigInt(112 - 16 * k)) & 0xffffn).toString(16)).join(":");
  return [v - 1n, v, last, last + 1n].filter((x) => x >= 0n && x <= max).map(text);
}

function inPrefix(prefix: string, address: string): boolean {
  const [net, len] = prefix.split("/") as [string, string];
  const [fa, a] = value(address);
  const [fp, p] = value(net);
  const host = BigInt((fp === 4 ? 32 : 128) - Number(len));
  return fa === fp && a >> host === p >> host;
}

describe("buildPrefixIndex - examples", () => {
  const items: Item[] = [
    { prefix: "10.0.0.0/8", id: 1 },
    { prefix: "10.1.0.0/16", id: 2 },
    { prefix: "10.1.2.0/24", id: 3 },
    { prefix: "10.1.0.0/16", id: 4 },
    { prefix: "0.0.0.0/0", id: 5 },
    { prefix: "2001:db8::/32", id: 6 },
    { prefix: "2001:db8::1", id: 7 },
  ];
  const index = buildPrefixIndex(items);

  it("prefixIndex - lookup lists every containing item, shortest first, equal prefixes in input order", () => {
    expect(index.lookup("10.1.2.3").map((i) => i.id)).toEqual([5, 1, 2, 4, 3]);
    expect(index.lookup("10.1.3.3").map((i) => i.id)).toEqual([5, 1, 2, 4]);
    expect(index.lookup("11.0.0.0").map((i) => i.id)).toEqual([5]);
    expect(index.lookup("2001:db8::1").map((i) => i.id)).toEqual([6, 7]);
    expect(index.lookup("2001:db9::").map((i) => i.id)).toEqual([]);
    expect(index.size).toBe(7);
  });

  it("prefixIndex - longest gives the first item of the longest containing prefix", () => {
    expect(index.longest("10.1.200.1")?.id).toBe(2);
    expect(index.longest("10.1.2.255")?.id).toBe(3);
    expect(index.longest(parseAddress("2001:db8::2"))?.id).toBe(6);
    expect(index.longest("::1")).toBeUndefined();
  });

  it("prefixIndex - an IPv4-mapped IPv6 address is not an IPv4 address", () => {
    expect(index.lookup("::ffff:10.1.2.3")).toEqual([]);
  });

  it("prefixIndex - reads the prefix through prefixOf, clears host bits, refuses garbage", () => {
    const byCidr = buildPrefixIndex([{ cidr: "192.0.2.1/24" }], (e) => e.cidr);
    expect(byCidr.lookup("192.0.2.200")).toHaveLength(1);
    expect(() => byCidr.lookup("192.0.2")).toThrow(PrefixError);
    expect(() => buildPrefixIndex([{ prefix: "nope" }])).toThrow(PrefixError);
  });

  it("prefixIndex - an empty index finds nothing", () => {
    const empty = buildPrefixIndex<Item>([]);
    expect(empty.lookup("10.0.0.1")).toEqual([]);
    expect(empty.longest("::")).toBeUndefined();
  });

  it("prefixIndex - the edges of the address space", () => {
    const edges = buildPrefixIndex([
      { prefix: "255.255.255.255/32" },
      { prefix: "255.255.255.0/24" },
      { prefix: "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128" },
      { prefix: "::/0" },
    ]);
    expect(edges.lookup("255.255.255.255")).toHaveLength(2);
    expect(edges.lookup("255.255.255.254")).toHaveLength(1);
    expect(edges.lookup("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")).toHaveLength(2);
    expect(edges.lookup("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe")).toHaveLength(1);
  });
});

describe("buildPrefixIndex - against a linear scan", () => {
  const v4 = fc.tuple(fc.nat(3), fc.nat(255), fc.integer({ min: 8, max: 32 })).map(([b, c, len]) => {
    const host = 32 - len;
    const v = (((10 << 24) | (b << 16) | (c << 8) | ((b * 37 + c) & 255)) >>> host) * 2 ** host;
    return `${[24, 16, 8, 0].map((s) => Math.floor(v / 2 ** s) % 256).join(".")}/${len}`;
  });
  const v6 = fc.tuple(fc.nat(3), fc.nat(15), fc.integer({ min: 0, max: 128 })).map(([a, b, len]) => {
    const full = (value(`2001:db8:${a}::${b.toString(16)}`)[1] >> BigInt(128 - len)) << BigInt(128 - len);
    const groups = Array.from({ length: 8 }, (_, k) => ((full >> BigInt(112 - 16 * k)) & 0xffffn).toString(16));
    return `${groups.join(":")}/${len}`;
  });
  const addresses = fc.array(
    fc.oneof(
      fc.tuple(fc.nat(4), fc.nat(255), fc.nat(255)).map(([b, c, d]) => `10.${b}.${c}.${d}`),
      fc.tuple(fc.nat(4), fc.nat(16)).map(([a, b]) => `2001:db8:${a}::${b.toString(16)}`),
    ),
    { minLength: 1, maxLength: 30 },
  );
  const check = (prefixes: string[], queries: string[]) => {
    const items = prefixes.map((prefix, id) => ({ prefix, id }));
    const index = buildPrefixIndex(items);
    for (const q of queries) {
      const want = items.filter((i) => inPrefix(i.prefix, q)).sort((a, b) => Number(a.prefix.split("/")[1]) - Number(b.prefix.split("/")[1]));
      expect(index.lookup(q)).toEqual(want);
      const max = want.at(-1);
      expect(index.longest(q)).toBe(max ? want.find((i) => i.prefix === max.prefix) : undefined);
    }
  };

  it("prefixIndex - lookup and longest agree with filtering every item", () => {
    fc.assert(fc.property(fc.array(fc.oneof(v4, v6), { maxLength: 60 }), addresses, check), { numRuns: 800 });
  });

  it("prefixIndex - agrees on indexes large enough for the radix sort", () => {
    fc.assert(fc.property(fc.array(fc.oneof(v4, v6), { minLength: 4200, maxLength: 5000 }), addresses, check), { numRuns: 10 });
  });
});

describe("buildPrefixTextIndex - examples", () => {
  const texts = ["10.0.0.0/8", "10.1.2.3/16", "10.1.2.0/24", "10.1.0.0/16", "0.0.0.0/0", "2001:DB8::/32", "2001:db8::1", "2001:0db8:0:0::/48", "2001:db8::/48"];
  const index = buildPrefixTextIndex(texts);

  it("prefixTextIndex - lookup gives the positions of every containing text, shortest first, equal prefixes in input order", () => {
    expect(index.lookup("10.1.2.3")).toEqual([4, 0, 1, 3, 2]);
    expect(index.lookup("10.1.3.3")).toEqual([4, 0, 1, 3]);
    expect(index.lookup("11.0.0.0")).toEqual([4]);
    expect(index.lookup("2001:db8::1")).toEqual([5, 7, 8, 6]);
    expect(index.lookup(parseAddress("2001:db9::"))).toEqual([]);
    expect(index.size).toBe(9);
  });

  it("prefixTextIndex - longest gives the first position of the longest containing prefix, or -1", () => {
    expect(index.longest("10.1.200.1")).toBe(1);
    expect(index.longest("10.1.2.255")).toBe(2);
    expect(index.longest("2001:db8::2")).toBe(7);
    expect(index.longest("::1")).toBe(-1);
    expect(index.longest("::ffff:10.1.2.3")).toBe(-1);
  });

  it("prefixTextIndex - text gives back each text exactly as given, canonical or not", () => {
    expect(texts.map((_, i) => index.text(i))).toEqual(texts);
    expect(() => index.text(9)).toThrow(RangeError);
    expect(() => index.text(-1)).toThrow(RangeError);
  });

  it("prefixTextIndex - keeps no string for a canonical text", () => {
    const canonical = Array.from({ length: 1000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
    const plain = buildPrefixTextIndex(canonical);
    const given = buildPrefixTextIndex(canonical.map((t) => t.replace(".0/24", ".1/24")));
    // The second keeps every text (host bits set): the difference is what the texts cost.
    expect(given.bytes - plain.bytes).toBe(1000 * 100);
    expect(plain.text(999)).toBe("10.3.231.0/24");
    expect(given.text(999)).toBe("10.3.231.1/24");
  });

  it("prefixTextIndex - an empty index finds nothing; garbage throws", () => {
    const empty = buildPrefixTextIndex([]);
    expect(empty.lookup("10.0.0.1")).toEqual([]);
    expect(empty.longest("::")).toBe(-1);
    expect(() => buildPrefixTextIndex(["10.0.0.0/8", "nope"])).toThrow(PrefixError);
  });
});

describe("buildPrefixTextIndex - against a linear scan", () => {
  const octet = fc.nat(255);
  const v4 = fc.oneof(
    // canonical, host bits set, or a bare address
    fc.tuple(fc.nat(3), octet, fc.integer({ min: 8, max: 32 })).map(([b, c, len]) => {
      const host = 32 - len;
      const v = (((10 << 24) | (b << 16) | (c << 8) | ((b * 37 + c) & 255)) >>> host) * 2 ** host;
      return `${[24, 16, 8, 0].map((s) => Math.floor(v / 2 ** s) % 256).join(".")}/${len}`;
    }),
    fc.tuple(fc.nat(3), octet, octet, fc.integer({ min: 0, max: 32 })).map(([b, c, d, len]) => `10.${b}.${c}.${d}/${len}`),
    fc.tuple(fc.nat(3), octet, octet).map(([b, c, d]) => `10.${b}.${c}.${d}`),
  );
  const v6 = fc.tuple(fc.nat(3), fc.nat(15), fc.integer({ min: 0, max: 128 }), fc.constantFrom("full", "short", "upper", "bare")).map(([a, b, len, form]) => {
    if (form === "bare") return `2001:db8:${a}::${b.toString(16)}`;
    const full = (value(`2001:db8:${a}::${b.toString(16)}`)[1] >> BigInt(128 - len)) << BigInt(128 - len);
    const groups = Array.from({ length: 8 }, (_, k) => ((full >> BigInt(112 - 16 * k)) & 0xffffn).toString(16));
    if (form === "full") return `${groups.join(":")}/${len}`;
    const short = `${formatAddress({ family: 6, words: Uint32Array.from([0, 1, 2, 3], (w) => Number((full >> BigInt(96 - 32 * w)) & 0xffffffffn)) })}/${len}`;
    return form === "upper" ? short.toUpperCase() : short;
  });
  const addresses = fc.array(
    fc.oneof(
      fc.tuple(fc.nat(4), octet, octet).map(([b, c, d]) => `10.${b}.${c}.${d}`),
      fc.tuple(fc.nat(4), fc.nat(16)).map(([a, b]) => `2001:db8:${a}::${b.toString(16)}`),
    ),
    { minLength: 1, maxLength: 30 },
  );
  const lengthOf = (text: string) => Number(text.split("/")[1] ?? (text.includes(":") ? 128 : 32));
  const check = (texts: string[], queries: string[]) => {
    const index = buildPrefixTextIndex(texts);
    expect(texts.map((_, i) => index.text(i))).toEqual(texts);
    for (const q of queries) {
      const want = texts
        .map((text, i) => ({ text, i }))
        .filter(({ text }) => inPrefix(text.includes("/") ? text : `${text}/${lengthOf(text)}`, q))
        .sort((a, b) => lengthOf(a.text) - lengthOf(b.text) || a.i - b.i)
        .map(({ i }) => i);
      expect(index.lookup(q)).toEqual(want);
      const longest = want.at(-1);
      expect(index.longest(q)).toBe(longest === undefined ? -1 : want.find((i) => lengthOf(texts[i]!) === lengthOf(texts[longest]!)));
    }
  };

  // Spread over many values of an address's top bits, and enough of them for the directory of a
  // large index (prefix-index.ts: 2^11 values for these ~10k bounds a family): each search
  // starts and ends in the bounds of its address's top bits, short prefixes crossing several.
  const top4 = fc.constantFrom(0, 10, 11, 127, 255);
  const wide4 = fc.tuple(top4, octet, octet, fc.integer({ min: 9, max: 32 })).map(([a, b, c, len]) => {
    const host = 32 - len;
    const v = ((((a << 24) | (b << 16) | (c << 8) | ((b * 37 + c) & 255)) >>> 0) >>> host) * 2 ** host;
    return `${[24, 16, 8, 0].map((s) => Math.floor(v / 2 ** s) % 256).join(".")}/${len}`;
  });
  const top6 = fc.constantFrom(0, 0x2001, 0x2a00, 0xfe80, 0xffff);
  const wide6 = fc.tuple(top6, fc.nat(0xffff), fc.nat(0xffff), fc.integer({ min: 9, max: 64 })).map(([a, b, c, len]) => {
    const full = (((BigInt(a) << 112n) | (BigInt(b) << 96n) | (BigInt(c) << 80n)) >> BigInt(128 - len)) << BigInt(128 - len);
    return `${Array.from({ length: 8 }, (_, k) => ((full >> BigInt(112 - 16 * k)) & 0xffffn).toString(16)).join(":")}/${len}`;
  });
  const wideAddresses = fc.array(
    fc.oneof(
      fc.tuple(top4, octet, octet, octet).map((o) => o.join(".")),
      fc.tuple(top4, fc.constantFrom(0, 255), fc.constantFrom(0, 255)).map(([a, b, d]) => `${a}.${b}.${d}.${d}`),
      fc.tuple(top6, fc.nat(0xffff), fc.nat(0xffff)).map(([a, b, c]) => `${a.toString(16)}:${b.toString(16)}:${c.toString(16)}::1`),
    ),
    { minLength: 1, maxLength: 40 },
  );

  it("prefixTextIndex - agrees on indexes large enough for the directory of their addresses' top bits", () => {
    fc.assert(
      fc.property(
        fc.array(wide4, { minLength: 12_000, maxLength: 12_000 }),
        fc.array(wide6, { minLength: 12_000, maxLength: 12_000 }),
        wideAddresses,
        (t4, t6, queries) => {
          const texts = [...t4, ...t6];
          // Besides the drawn addresses, those at and beside some prefixes' ends, where an answer
          // changes: some of those ends are the first or last bound of their directory entry.
          check(texts, [...queries, ...texts.filter((_, i) => i % 1500 === 0).flatMap(edgesOf)]);
        },
      ),
      // No shrinking: a failure's 24,000 prefixes would take minutes to shrink; it is reported as found.
      { numRuns: 3, endOnFailure: true },
    );
  });

  it("prefixTableIndex - over the parsed lists answers as the text index over their canonical texts, IPv4 first", () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(v4, v6), { maxLength: 60 }), addresses, (texts, queries) => {
        const canonical = texts.map((t) => canonicalCidr(t, { mode: "mask" }));
        const ordered = [...canonical.filter((t) => !t.includes(":")), ...canonical.filter((t) => t.includes(":"))];
        const lists = parsePrefixList(ordered);
        const byTable = buildPrefixTableIndex(lists.v4, lists.v6);
        const byText = buildPrefixTextIndex(ordered);
        expect(byTable.size).toBe(ordered.length);
        expect(ordered.map((_, i) => byTable.text(i))).toEqual(ordered);
        for (const q of queries) {
          expect(byTable.lookup(q)).toEqual(byText.lookup(q));
          expect(byTable.longest(q)).toBe(byText.longest(q));
        }
      }),
      { numRuns: 500 },
    );
  });

  it("prefixTextIndex - lookup, longest and text agree with the texts", () => {
    fc.assert(fc.property(fc.array(fc.oneof(v4, v6), { maxLength: 60 }), addresses, check), { numRuns: 800 });
  });

  it("prefixTextIndex - agrees on indexes large enough for the radix sort", () => {
    fc.assert(fc.property(fc.array(fc.oneof(v4, v6), { minLength: 4200, maxLength: 5000 }), addresses, check), { numRuns: 10 });
  });
});
