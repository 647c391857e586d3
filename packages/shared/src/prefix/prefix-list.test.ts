import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { aggregateList } from "./aggregate.js";
import { formatPrefix, HOST_BITS_CLEARED, NOT_CANONICAL, parsePrefixInto, scanIPv4Prefix, scanIPv6Prefix } from "./cidr.js";
import { aggregatePrefixes, aggregateTagged, canonicalCidr, formatAddress, parseCidr, removeBogons } from "./index.js";
import { formatPrefixList, PrefixList, parsePrefixList } from "./prefix-list.js";

// The bulk parsers (scanIPv4Prefix, scanIPv6Prefix, parsePrefixList) and the reuse of input
// strings as output (PrefixList.source) are fast paths beside parsePrefixInto and the
// formatter. These properties check that they change nothing: the same words and lengths, the
// same refusals, and a text handed back only when it is exactly what formatting would write.

const word = fc.oneof(fc.constantFrom(0, 1, 0xffff, 0x10000, 0xffff0000, 0xffffffff), fc.nat(0xffffffff));
/** Mostly zero groups, so that runs of zeros (and their compression) are common. */
const zeroish = fc.oneof(fc.constant(0), fc.constant(0), word);
const lenOf = (max: number) =>
  fc.oneof(
    fc.constantFrom(0, 1, 8, 31, 32, 48, 64, 96, 127, 128).map((l) => Math.min(l, max)),
    fc.nat(max),
  );

const v4Value = fc.record({ w: word, len: lenOf(32), bare: fc.boolean() });
const v6Value = fc.record({ words: fc.array(zeroish, { minLength: 4, maxLength: 4 }), len: lenOf(128), bare: fc.boolean() });

const groupsOf = (words: readonly number[]) => words.flatMap((w) => [w >>> 16, w & 0xffff]);

/**
 * IPv6 text of the groups in one of many forms, canonical or not: upper case, zero-padded
 * groups, the last 32 bits as a dotted quad, and :: for any run of zero groups (not only the
 * one RFC 5952 compresses) or none.
 */
function v6Text(groups: readonly number[], form: { gapAt: number; gapLen: number; upper: boolean; pad: boolean; dotted: boolean }): string {
  const hex = (g: number) => {
    const t = form.pad ? g.toString(16).padStart(4, "0") : g.toString(16);
    return form.upper ? t.toUpperCase() : t;
  };
  let parts = groups.map(hex);
  if (form.dotted) {
    const last = groups[6]! * 65536 + groups[7]!;
    parts = [...parts.slice(0, 6), `${last >>> 24}.${(last >>> 16) & 255}.${(last >>> 8) & 255}.${last & 255}`];
  }
  const a = form.gapAt;
  const b = a + form.gapLen;
  if (form.gapLen > 0 && b <= (form.dotted ? 6 : 8) && groups.slice(a, b).every((g) => g === 0)) {
    return `${parts.slice(0, a).join(":")}::${parts.slice(b).join(":")}`;
  }
  return parts.join(":");
}

const v6Form = fc.record({
  gapAt: fc.nat(7),
  gapLen: fc.integer({ min: 0, max: 8 }),
  upper: fc.boolean(),
  pad: fc.boolean(),
  dotted: fc.boolean(),
});

/** Texts of prefixes in many forms, valid and (after a mutation) not. */
const prefixText: fc.Arbitrary<string> = fc.oneof(
  v4Value.map(({ w, len, bare }) => `${w >>> 24}.${(w >>> 16) & 255}.${(w >>> 8) & 255}.${w & 255}${bare ? "" : `/${len}`}`),
  fc.tuple(v6Value, v6Form).map(([{ words, len, bare }, form]) => `${v6Text(groupsOf(words), form)}${bare ? "" : `/${len}`}`),
);
const mutated: fc.Arbitrary<string> = fc
  .tuple(prefixText, fc.nat(40), fc.constantFrom("", "0", "1", "a", "F", ":", "::", ".", "/", "/0", "00", " ", "%", "g", "x", "12345"), fc.nat(2))
  .map(([text, at, piece, cut]) => {
    const i = at % (text.length + 1);
    return text.slice(0, i) + piece + text.slice(i + cut);
  });
/** Texts at the edges of the grammar, valid or not. */
const EDGES = [
  "1:2:3:4:5:6:7:8:",
  ":1:2:3:4:5:6:7:8",
  "1:2:3:4:5:6:7:8::",
  "::1:2:3:4:5:6:7:8",
  "1:2:3:4:5:6:7::",
  "::2:3:4:5:6:7:8",
  "1::2::3",
  "1:/64",
  "1::/",
  "::/",
  ":::",
  ":",
  "::",
  "",
  "/",
  "1:2:3:4:5:6:7:8/",
  "1:2:3:4:5:6:7:8:9",
  "12345::",
  "::ffff:1.2.3.4",
  "::1.2.3",
  "1:2:3:4:5:6:1.2.3.4",
  "1:2:3:4:5:6:7:1.2.3.4",
  "fe80::1%eth0",
  "::/129",
  "::/01",
  "::/0",
  "::/00",
  "1.2.3.4.5",
  "1.2.3",
  "1.2.3/8",
  "01.2.3.4",
  "1.2.3.04",
  "0.0.0.0/0",
  "1.2.3.4/033",
  "1.2.3.4/33",
  "1.2.3.4/3a",
  "1.2.3.256/32",
  "255.255.255.255/32",
  "1.2.3.4 ",
];
const anyText = fc.oneof(prefixText, prefixText, mutated, fc.constantFrom(...EDGES));

/** What parsePrefixInto makes of a text in its own family: words and length, or a refusal. */
function slow(text: string): { family: 4 | 6; words: number[]; result: number } | null {
  const family = text.indexOf(":") >= 0 ? 6 : 4;
  const words = new Uint32Array(4);
  const result = parsePrefixInto(text, family, words, 0);
  if (typeof result === "string") return null;
  return { family, words: Array.from(words.subarray(0, family === 4 ? 1 : 4)), result };
}

describe("bulk scanners - against parsePrefixInto", () => {
  it("scan - accepts what parsePrefixInto accepts, with the same words and length; canonical exactly when formatting writes the text", () => {
    fc.assert(
      fc.property(anyText, (text) => {
        const want = slow(text);
        const w4 = new Uint32Array(1);
        const w6 = new Uint32Array(4);
        const r4 = scanIPv4Prefix(text, w4, 0);
        const r6 = r4 >= 0 ? -1 : scanIPv6Prefix(text, w6, 0);
        if (r4 < 0 && r6 < 0) {
          // Refused by both: parsePrefixInto refuses it too, or it is an IPv6 form that only
          // parsePrefixInto reads (a dotted quad at the end).
          if (want !== null) {
            expect(want.family).toBe(6);
            expect(text).toContain(".");
          }
          return;
        }
        const result = r4 >= 0 ? r4 : r6;
        expect(want).not.toBeNull();
        expect(want!.family).toBe(r4 >= 0 ? 4 : 6);
        expect(Array.from(r4 >= 0 ? w4 : w6)).toEqual(want!.words);
        const canonical = result < NOT_CANONICAL;
        expect(canonical ? result : result - NOT_CANONICAL).toBe(want!.result);
        const length = want!.result % HOST_BITS_CLEARED;
        const formatted = formatPrefix({ family: want!.family, words: Uint32Array.from(want!.words), length });
        expect(canonical).toBe(formatted === text);
      }),
      { numRuns: 20000 },
    );
  });

  it.each([
    ["10.0.0.0/8", true],
    ["10.0.0.0", false],
    ["10.0.0.1/8", false],
    ["2001:db8::/32", true],
    ["2001:DB8::/32", false],
    ["2001:0db8::/32", false],
    ["2001:db8::1:0:0:0/80", false], // the longer run is the one to compress
    ["2001:db8:0:0:1::/80", true],
    ["2001:db8::1:0:0:1/128", true], // first of two equal runs
    ["2001:db8:0:0:1::1/128", false],
    ["1:2:3:4:5:6:7::/128", false], // :: for one group
    ["1:2:3:4:5:6:7:0/128", true],
    ["::/0", true],
    ["::ffff:102:304/128", false], // mapped: canonical text is dotted
  ])("scan - %s is canonical: %s", (text, canonical) => {
    const words = new Uint32Array(4);
    const result = text.includes(":") ? scanIPv6Prefix(text, words, 0) : scanIPv4Prefix(text, words, 0);
    expect(result).toBeGreaterThanOrEqual(0);
    expect(result < NOT_CANONICAL).toBe(canonical);
    expect(canonicalCidr(text, { mode: "mask" }) === text).toBe(canonical);
  });
});

/** The prefixes of a list, as [words..., length] rows. */
function rows(list: PrefixList): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < list.count; i++) out.push([...list.words.subarray(i * list.W, (i + 1) * list.W), list.lens[i]!]);
  return out;
}

describe("scanIPv4Prefix - a text read in place", () => {
  it("scan - text.slice(from, to) read where it is answers what the slice does, with the same words", () => {
    fc.assert(
      fc.property(anyText, fc.string({ maxLength: 4 }), fc.string({ maxLength: 4 }), (text, before, after) => {
        const whole = `${before}${text}${after}`;
        const alone = new Uint32Array(1);
        const inPlace = new Uint32Array(1);
        const want = scanIPv4Prefix(text, alone, 0);
        expect(scanIPv4Prefix(whole, inPlace, 0, before.length, before.length + text.length)).toBe(want);
        if (want >= 0) expect(inPlace[0]).toBe(alone[0]);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("parsePrefixList - against parsePrefixInto, text by text", () => {
  const validText = prefixText.filter((t) => slow(t) !== null);

  it("parse - the same prefixes, families and count of host-bit texts; src only for canonical texts", () => {
    fc.assert(
      fc.property(fc.array(validText, { maxLength: 600 }), (texts) => {
        const families = new Uint8Array(texts.length);
        const { v4, v6, masked } = parsePrefixList(texts, families);
        const want = texts.map(slow);
        const row = (p: NonNullable<ReturnType<typeof slow>>) => [...p.words, p.result % HOST_BITS_CLEARED];
        expect(rows(v4)).toEqual(want.filter((p) => p!.family === 4).map((p) => row(p!)));
        expect(rows(v6)).toEqual(want.filter((p) => p!.family === 6).map((p) => row(p!)));
        expect(Array.from(families)).toEqual(want.map((p) => p!.family));
        expect(masked).toBe(want.filter((p) => p!.result >= HOST_BITS_CLEARED).length);
        // src[k] names a text that is exactly prefix k's canonical text, and every canonical
        // text is named (but for IPv6 with a dotted quad, which the slow path reads).
        const at = { 4: 0, 6: 0 };
        for (let i = 0; i < texts.length; i++) {
          const list = families[i] === 4 ? v4 : v6;
          const k = at[list.family]++;
          const text = formatPrefix({ family: list.family, words: list.words.slice(k * list.W, (k + 1) * list.W), length: list.lens[k]! });
          const s = list.src![k]!;
          if (s >= 0) expect([s, texts[s]]).toEqual([i, text]);
          else expect(texts[i] === text && !texts[i]!.includes(".", list.family === 6 ? 0 : Infinity)).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("parse - grows the IPv6 list when the sample saw too few IPv6 texts", () => {
    // 64 samples at (k + 0.5) * n / 64: make those IPv4 and most others IPv6.
    const n = 12_800;
    const sampled = new Set(Array.from({ length: 64 }, (_, k) => Math.floor(((k + 0.5) * n) / 64)));
    const texts = Array.from({ length: n }, (_, i) => (sampled.has(i) ? `10.0.${i >> 8}.${i & 255}/32` : `2001:db8::${i.toString(16)}/128`));
    const { v4, v6 } = parsePrefixList(texts);
    expect(v4.count).toBe(64);
    expect(v6.count).toBe(n - 64);
    expect(formatPrefixList(v6)).toEqual(texts.filter((t) => t.includes(":")).map((t) => canonicalCidr(t)));
  });

  it("parse - throws on the first bad text, naming it", () => {
    expect(() => parsePrefixList(["10.0.0.0/8", "2001:db8::/129"])).toThrow('"2001:db8::/129" is not an IP prefix');
    expect(() => parsePrefixList(["10.0.0.0/8", "10.0.0.0/"])).toThrow('"10.0.0.0/" is not an IP prefix');
  });
});

/** The same list without its source texts: every text is written anew. */
function withoutSource(list: PrefixList): PrefixList {
  const copy = new PrefixList(list.family, list.count);
  copy.words.set(list.words.subarray(0, list.count * list.W));
  copy.lens.set(list.lens.subarray(0, list.count));
  copy.count = list.count;
  return copy;
}

/** A non-canonical text of the same prefix (so that it cannot be reused): bare, or with a host bit. */
function uncanonical(text: string): string {
  const p = parseCidr(text, { mode: "mask" });
  const max = p.family === 4 ? 32 : 128;
  if (p.length === max) return formatAddress(p);
  const words = p.words.slice();
  words[words.length - 1]! |= 1;
  return `${formatAddress({ family: p.family, words })}/${p.length}`;
}

describe("reuse of canonical input texts - exactly what formatting would write", () => {
  const smallSpace = fc.oneof(
    fc.record({ off: fc.nat(255), rel: fc.nat(8) }).map(({ off, rel }) => `10.0.0.${off - (off % 2 ** (8 - rel))}/${24 + rel}`),
    fc
      .record({ off: fc.nat(255), rel: fc.nat(8) })
      .map(({ off, rel }) => canonicalCidr(`2001:db8::${(off - (off % 2 ** (8 - rel))).toString(16)}/${120 + rel}`)),
    prefixText.filter((t) => slow(t) !== null),
  );

  it("reuse - formatPrefixList with source texts equals formatting every prefix", () => {
    fc.assert(
      fc.property(fc.array(smallSpace, { maxLength: 300 }), fc.array(fc.boolean(), { maxLength: 300 }), (texts, keepBits) => {
        const { v4, v6 } = parsePrefixList(texts);
        for (const list of [v4, v6, aggregateList(v4), aggregateList(v6)]) {
          const keep = Uint8Array.from({ length: list.count }, (_, i) => (keepBits[i] === false ? 0 : 1));
          const reused = formatPrefixList(list, keep);
          expect(reused).toEqual(formatPrefixList(withoutSource(list), keep));
          for (const text of reused) expect(canonicalCidr(text)).toBe(text);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("reuse - aggregatePrefixes, removeBogons and aggregateTagged give the same texts for canonical and non-canonical input", () => {
    fc.assert(
      fc.property(fc.array(smallSpace, { maxLength: 300 }), (texts) => {
        const other = texts.map(uncanonical);
        expect(other.every((t, i) => canonicalCidr(t, { mode: "mask" }) === canonicalCidr(texts[i]!, { mode: "mask" }))).toBe(true);
        const aggregated = aggregatePrefixes(texts);
        expect(aggregated).toEqual(aggregatePrefixes(other));
        for (const text of aggregated) expect(canonicalCidr(text)).toBe(text);
        expect(removeBogons(texts, { exclude: ["10.0.0.128/26", "2001:db8::40/122"] })).toEqual(
          removeBogons(other, { exclude: ["10.0.0.128/26", "2001:db8::40/122"] }),
        );
        const half = texts.length >> 1;
        const modules = (t: string[]) => [
          { prefixes: t.slice(0, half), communities: ["65000:1"] },
          { prefixes: t.slice(half), communities: ["65000:2"] },
        ];
        expect(aggregateTagged(modules(texts))).toEqual(aggregateTagged(modules(other)));
      }),
      { numRuns: 500 },
    );
  });

  it("reuse - an output prefix equal to an input prefix takes its text only when that text is canonical", () => {
    const { v4, v6 } = parsePrefixList(["10.0.0.0/24", "10.0.1.0/24", "2001:db8::/48", "2001:DB8:2::/48", "192.0.2.0/24", "10.0.0.0/23"]);
    const a4 = aggregateList(v4);
    const a6 = aggregateList(v6);
    expect(formatPrefixList(a4)).toEqual(["10.0.0.0/23", "192.0.2.0/24"]);
    expect(Array.from(a4.src!.subarray(0, a4.count))).toEqual([5, 4]);
    expect(formatPrefixList(a6)).toEqual(["2001:db8::/48", "2001:db8:2::/48"]);
    expect(Array.from(a6.src!.subarray(0, a6.count))).toEqual([2, -1]);
  });
});
