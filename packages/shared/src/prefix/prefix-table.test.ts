import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalCidr } from "./cidr.js";
import { isSorted, type PrefixTable, parseJoinedIPv4, parsePrefixTexts, prefixText, sortedPairs } from "./prefix-table.js";

// The packed tables against a brute-force model on strings: BigInt addresses, sorted and
// de-duplicated with plain comparisons.

const v4 = fc
  .tuple(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 }))
  .map(([a, len]) => `${[24, 16, 8, 0].map((s) => (a >>> s) & 255).join(".")}/${len}`);
const v6 = fc
  .tuple(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), fc.integer({ min: 0, max: 128 }))
  .map(([g, len]) => `${g.map((x) => x.toString(16)).join(":")}/${len}`);
const texts = fc.array(fc.oneof(v4, v6), { maxLength: 40 });

/** The model: (network as BigInt, length) of a canonical CIDR. */
function model(text: string): { family: 4 | 6; network: bigint; len: number } {
  const canonical = canonicalCidr(text, { mode: "mask" });
  const [addr = "", len = ""] = canonical.split("/");
  const family = addr.includes(":") ? 6 : 4;
  let network = 0n;
  if (family === 4) for (const part of addr.split(".")) network = (network << 8n) | BigInt(part);
  else {
    const [head = "", tail = ""] = addr.split("::");
    const h = head ? head.split(":") : [];
    const t = addr.includes("::") ? (tail ? tail.split(":") : []) : [];
    const groups = [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
    for (const g of groups) network = (network << 16n) | BigInt(Number.parseInt(g, 16));
  }
  return { family, network, len: Number(len) };
}

function rows(t: PrefixTable): { network: bigint; len: number }[] {
  return Array.from({ length: t.count }, (_, i) => {
    let network = 0n;
    for (let w = 0; w < t.W; w++) network = (network << 32n) | BigInt(t.words[i * t.W + w] as number);
    return { network, len: t.lens[i] as number };
  });
}

const byModel = (a: { network: bigint; len: number }, b: { network: bigint; len: number }) =>
  a.network < b.network ? -1 : a.network > b.network ? 1 : a.len - b.len;

describe("PrefixTable", () => {
  it("parsePrefixTexts - each text lands in its family's table with host bits cleared, as the model parses it", () => {
    fc.assert(
      fc.property(texts, (list) => {
        const tables = parsePrefixTexts(list);
        const models = list.map(model);
        for (const family of [4, 6] as const) {
          const expected = models.filter((m) => m.family === family).map(({ network, len }) => ({ network, len }));
          expect(rows(family === 4 ? tables.v4 : tables.v6)).toEqual(expected);
        }
      }),
    );
  });

  it("prefixText - each parsed prefix written back is its canonical text (canonicalCidr's)", () => {
    fc.assert(
      fc.property(texts, (list) => {
        const tables = parsePrefixTexts(list);
        const written = [
          ...Array.from({ length: tables.v4.count }, (_, i) => prefixText(tables.v4, i)),
          ...Array.from({ length: tables.v6.count }, (_, i) => prefixText(tables.v6, i)),
        ];
        const canonical = list.map((t) => canonicalCidr(t, { mode: "mask" }));
        expect(written).toEqual([...canonical.filter((t) => !t.includes(":")), ...canonical.filter((t) => t.includes(":"))]);
      }),
    );
  });

  it("parseJoinedIPv4 - canonical IPv4 prefixes joined by spaces give parsePrefixTexts' table; anything else gives null", () => {
    const canonical4 = v4.map((t) => canonicalCidr(t, { mode: "mask" }));
    const odd = fc.constantFrom(
      "10.0.0.1/8",
      "010.0.0.0/8",
      "10.0.0.0/33",
      "10.0.0.0",
      "10.0.0.0/08",
      "2001:db8::/32",
      "10.0.0.0/8,",
      "256.0.0.0/8",
      "10..0.0/8",
      "",
    );
    fc.assert(
      fc.property(fc.array(canonical4, { maxLength: 30 }), fc.option(fc.tuple(odd, fc.nat()), { nil: null }), (list, bad) => {
        if (bad === null) {
          const t = parseJoinedIPv4(list.join(" "), list.length);
          expect(t).not.toBeNull();
          expect(rows(t!)).toEqual(rows(parsePrefixTexts(list).v4));
          // Another count, or a doubled or trailing space, is not this text.
          expect(parseJoinedIPv4(list.join(" "), list.length + 1)).toBeNull();
          if (list.length > 1) expect(parseJoinedIPv4(list.join("  "), list.length)).toBeNull();
          if (list.length) expect(parseJoinedIPv4(`${list.join(" ")} `, list.length)).toBeNull();
          return;
        }
        const withBad = [...list];
        withBad.splice(bad[1] % (list.length + 1), 0, bad[0]);
        expect(parseJoinedIPv4(withBad.join(" "), withBad.length)).toBeNull();
      }),
    );
  });

  it("sortedPairs - sorted by address, length, tag, each distinct pair once, as a sort of the model", () => {
    fc.assert(
      fc.property(texts, fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 40, maxLength: 40 }), (list, tagList) => {
        const tables = parsePrefixTexts(list);
        for (const table of [tables.v4, tables.v6]) {
          const tags = Uint32Array.from(tagList.slice(0, table.count));
          const sorted = sortedPairs(table, tags, 3);
          expect(isSorted(sorted.table)).toBe(true);
          const got = rows(sorted.table).map((r, i) => `${r.network}/${r.len}#${sorted.tags[i]}`);
          const seen = new Set<string>();
          const want = rows(table)
            .map((r, i) => ({ ...r, tag: tags[i] as number }))
            .sort((a, b) => byModel(a, b) || a.tag - b.tag)
            .map((r) => `${r.network}/${r.len}#${r.tag}`)
            .filter((k) => !seen.has(k) && seen.add(k));
          expect(got).toEqual(want);
        }
      }),
    );
  });
});
