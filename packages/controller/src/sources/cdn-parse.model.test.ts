// parseTextFeed and parseJsonFeed against the text parse as it was before the canonical-value
// fast path and the in-place line scan: split the lines by regex, cut the comment, trim, parse
// every value and format it back. Same prefixes in the same order, same counts, same samples,
// for any mix of values a feed can hold.
import { formatCidrValue, parseCidrValue } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type FeedParseResult, parseJsonFeed, parseTextFeed } from "./cdn-parse.js";

/** The model: parseTextFeed as written before. */
function modelTextFeed(text: string): FeedParseResult {
  const seen = new Set<string>();
  const result: FeedParseResult = { prefixes: [], masked: 0, rejected: 0, rejectedSample: [] };
  for (const line of text.replace(/^\uFEFF/, "").split(/\r\n|\n|\r/)) {
    const comment = line.search(/[#;]/);
    const value = (comment === -1 ? line : line.slice(0, comment)).trim();
    if (value === "") continue;
    const parsed = parseCidrValue(value);
    if (!parsed.ok) {
      result.rejected++;
      const reason = parsed.code === "invalid_prefix_length" ? "bad_prefix_length" : "not_an_address";
      if (result.rejectedSample.length < 20) result.rejectedSample.push({ value: value.slice(0, 200), reason });
      continue;
    }
    if (parsed.masked) result.masked++;
    const canonical = formatCidrValue(parsed.cidr);
    if (!seen.has(canonical)) {
      seen.add(canonical);
      result.prefixes.push(canonical);
    }
  }
  return result;
}

const octet = fc.integer({ min: 0, max: 255 });
const quad = fc.tuple(octet, octet, octet, octet).map((o) => o.join("."));
const hex = (max: number) => fc.integer({ min: 0, max }).map((x) => x.toString(16));
// Groups drawn mostly zero, so that runs of zeros (and their compression) are common.
const group = fc.oneof(fc.constant("0"), fc.constant("0"), hex(0xffff), hex(0xf));
const groups8 = fc.array(group, { minLength: 8, maxLength: 8 });

/** IPv6 text in many forms: full, compressed anywhere, upper case, leading zeros, a dotted tail. */
const ipv6 = fc.oneof(
  groups8.map((g) => g.join(":")),
  fc.tuple(groups8, fc.integer({ min: 0, max: 7 }), fc.integer({ min: 1, max: 8 })).map(([g, at, len]) => {
    const cut = Math.min(8, at + len);
    return `${g.slice(0, at).join(":")}::${g.slice(cut).join(":")}`;
  }),
  groups8.map((g) => g.join(":").toUpperCase()),
  groups8.map((g) => g.map((x) => x.padStart(4, "0")).join(":")),
  fc.tuple(fc.array(group, { minLength: 0, maxLength: 5 }), quad).map(([g, q]) => `${g.length ? g.join(":") : ""}::${g.length ? "" : "ffff:"}${q}`),
);

/** An address with a length that is often right, sometimes out of range or malformed. */
const withLength = (address: fc.Arbitrary<string>, max: number) =>
  fc
    .tuple(address, fc.oneof(fc.integer({ min: 0, max }), fc.integer({ min: 0, max: 200 }), fc.constantFrom("", "0", "08", "x", "-1", " 24", "24 ")))
    .map(([a, len]) => `${a}/${len}`);

/** Canonical prefixes (the fast path's), drawn by masking a random address. */
const canonical = fc.oneof(
  fc.tuple(quad, fc.integer({ min: 0, max: 32 })).map(([q, len]) => {
    const parsed = parseCidrValue(`${q}/${len}`);
    return parsed.ok ? formatCidrValue(parsed.cidr) : q;
  }),
  fc.tuple(ipv6, fc.integer({ min: 0, max: 128 })).map(([a, len]) => {
    const parsed = parseCidrValue(`${a}/${len}`);
    return parsed.ok ? formatCidrValue(parsed.cidr) : a;
  }),
);

// A small space, so that one prefix comes in several forms (canonical, host bits set, bare) in a feed.
const smallOctet = fc.constantFrom(0, 1, 10, 128, 255);
const small = fc.oneof(
  fc
    .tuple(fc.tuple(smallOctet, smallOctet, smallOctet, smallOctet), fc.constantFrom("", "/0", "/1", "/8", "/24", "/31", "/32"))
    .map(([q, len]) => q.join(".") + len),
  fc
    .tuple(fc.constantFrom("::", "::1", "1::", "1::1", "0:0:0:0:0:0:0:1", "::ffff:1.2.3.4", "::102:304"), fc.constantFrom("", "/0", "/16", "/64", "/128"))
    .map(([a, len]) => a + len),
);

const value = fc.oneof(
  { weight: 6, arbitrary: canonical },
  { weight: 3, arbitrary: small },
  { weight: 2, arbitrary: withLength(quad, 32) }, // host bits often set
  { weight: 2, arbitrary: withLength(ipv6, 128) },
  { weight: 1, arbitrary: quad }, // bare address
  { weight: 1, arbitrary: ipv6 },
  {
    weight: 1,
    arbitrary: fc.tuple(quad, fc.integer({ min: 0, max: 3 })).map(([q, k]) =>
      q
        .split(".")
        .map((o, i) => (i === k ? `0${o}` : o))
        .join("."),
    ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "not-an-ip",
      "1.2.3",
      "1.2.3.4.5",
      "256.0.0.0/8",
      "1.2.3.4 5.6.7.8",
      "fe80::1%eth0",
      "0x7f000001",
      ":::",
      "1::2::3",
      "/24",
      "é.1.2.3",
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEF.:/ \t#;"), maxLength: 24 }) },
);

const blank = fc.constantFrom("", " ", "\t", "  ", "\u00a0", "\ufeff", "\u2028", "\u3000", "\v", "\f", "\u0085");
const comment = fc.constantFrom("", "", "# note", ";x", " # 10.0.0.0/8", "#", ";");
const line = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(blank, value, blank, comment).map((parts) => parts.join("")) },
  { weight: 1, arbitrary: comment },
  { weight: 1, arbitrary: blank },
);
const eol = fc.constantFrom("\n", "\n", "\r\n", "\r");

/** A feed: lines (some repeated) joined by mixed line ends, maybe a BOM, maybe a final line end. */
const feed = fc
  .tuple(fc.array(line, { maxLength: 60 }), fc.array(fc.nat(), { maxLength: 20 }), fc.array(eol, { minLength: 80, maxLength: 80 }), fc.boolean(), fc.boolean())
  .map(([lines, repeats, ends, bom, last]) => {
    const all = [...lines];
    for (const r of repeats) if (lines.length) all.splice(r % (all.length + 1), 0, lines[r % lines.length]!);
    const text = all.map((l, i) => l + (i < all.length - 1 || last ? ends[i % ends.length] : "")).join("");
    return (bom ? "\ufeff" : "") + text;
  });

describe("parseTextFeed against the model", () => {
  it("gives the model's prefixes, counts and samples for any feed", () => {
    fc.assert(
      fc.property(feed, (text) => {
        expect(parseTextFeed(text)).toEqual(modelTextFeed(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("gives the model's answer for feeds with no comment and no CR (their lines found by indexOf)", () => {
    const plainFeed = fc
      .tuple(
        fc.array(fc.oneof({ weight: 8, arbitrary: fc.tuple(blank, value, blank).map((p) => p.join("")) }, { weight: 1, arbitrary: blank }), { maxLength: 60 }),
        fc.boolean(),
        fc.boolean(),
      )
      .map(([lines, bom, last]) => (bom ? "\ufeff" : "") + lines.join("\n") + (last ? "\n" : ""))
      .filter((text) => !/[#;\r]/.test(text));
    fc.assert(
      fc.property(plainFeed, (text) => {
        expect(parseTextFeed(text)).toEqual(modelTextFeed(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("gives the model's answer for feeds of arbitrary characters", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.constantFrom(..."0123456789abcdef.:/ \t#;\r\n\ufeff\u00a0x") }), (text) => {
        expect(parseTextFeed(text)).toEqual(modelTextFeed(text));
      }),
      { numRuns: 3000 },
    );
  });

  it("gives the model's answer for thousands of distinct prefixes, each again in other forms, and many rejections", () => {
    const canonicalRun = Array.from({ length: 5000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`);
    const otherForms = Array.from({ length: 5000 }, (_, i) => (i % 2 ? `10.${i >> 8}.${i & 255}.7/24` : `10.${i >> 8}.${i & 255}.0`));
    const lines = [...canonicalRun, ...otherForms, ...canonicalRun.slice(0, 100), ...Array.from({ length: 30 }, (_, i) => `junk ${i}`)];
    const text = lines.join("\r\n");
    expect(parseTextFeed(text)).toEqual(modelTextFeed(text));
  });
});

describe("parseJsonFeed against the model", () => {
  it("gives the model's answer for the same values in a JSON array", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(blank, value, blank).map((p) => p.join("")),
          { maxLength: 40 },
        ),
        (values) => {
          // The model reads one value a line and skips blank ones: only values without a line end
          // or a comment, and not blank, compare (a blank JSON value is refused, a blank line skipped).
          const plain = values.filter((v) => !/[\r\n#;]/.test(v) && v.trim() !== "");
          expect(parseJsonFeed(JSON.stringify({ p: plain }), "p[*]")).toEqual(modelTextFeed(plain.join("\n")));
        },
      ),
      { numRuns: 1000 },
    );
  });
});
