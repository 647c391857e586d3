import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  appendRangeCidrValues,
  bitsOf,
  type CidrValue,
  cidrValueContains,
  type Family,
  formatCidrValue,
  formatIpValue,
  parseCidrValue,
  parseIpValue,
  rangeToCidrs,
  valueToWords,
  wordsToValue,
} from "./index.js";

// Brute-force models on plain bigints, written the obvious way, for the property tests.
const hostMask = (family: Family, length: number): bigint => (1n << BigInt(bitsOf(family) - length)) - 1n;

function modelRangeCidrs(family: Family, start: bigint, end: bigint): CidrValue[] {
  const bits = bitsOf(family);
  const out: CidrValue[] = [];
  while (start <= end) {
    let hostBits = 0;
    while (hostBits < bits && ((start >> BigInt(hostBits)) & 1n) === 0n) hostBits++;
    while (hostBits > 0 && start + (1n << BigInt(hostBits)) - 1n > end) hostBits--;
    out.push({ family, network: start, length: bits - hostBits });
    start += 1n << BigInt(hostBits);
  }
  return out;
}

const family = fc.constantFrom<Family>(4, 6);
const anyValue = (f: Family) => fc.bigInt({ min: 0n, max: (1n << BigInt(bitsOf(f))) - 1n });
const ipValue = family.chain((f) => anyValue(f).map((value) => ({ family: f, value })));
const cidrValue = family.chain((f) =>
  fc.tuple(anyValue(f), fc.integer({ min: 0, max: bitsOf(f) })).map(([value, length]) => ({ family: f, network: value & ~hostMask(f, length), length })),
);

describe("ip-value examples", () => {
  it.each([
    ["2001:DB8:0:0:0:0:0:1", "2001:db8::1"],
    ["2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"],
    ["2001:0:0:1:0:0:0:0", "2001:0:0:1::"],
    ["2001:db8:1:1:1:1:0:1", "2001:db8:1:1:1:1:0:1"],
    ["::", "::"],
    ["::ffff:1.2.3.4", "::ffff:1.2.3.4"], // RFC 5952 section 5: an IPv4-mapped address is written dotted
    ["0:0:0:0:0:0:0:1", "::1"],
  ])("formats %s as %s (RFC 5952)", (text, canonical) => {
    const ip = parseIpValue(text)!;
    expect(formatIpValue(ip)).toBe(canonical);
  });

  it("refuses zone ids, leading zeros and lengths where an address is due", () => {
    expect(parseIpValue("fe80::1%eth0")).toBeNull();
    expect(parseIpValue("01.2.3.4")).toBeNull();
    expect(parseIpValue("10.0.0.0/8")).toBeNull();
    expect(parseIpValue("10.1.2.3")).toEqual({ family: 4, value: 0x0a010203n });
  });

  it("masks a prefix, reports the host bits and says why a text is refused", () => {
    expect(parseCidrValue("2001:db8::ff/64")).toMatchObject({ ok: true, masked: true, cidr: { length: 64 } });
    expect(parseCidrValue("0.0.0.0/0")).toMatchObject({ ok: true, masked: false, cidr: { network: 0n, length: 0 } });
    expect(parseCidrValue("1.2.3.4/")).toMatchObject({ ok: false, code: "invalid_prefix_length" });
    expect(parseCidrValue("300.1.2.3/24")).toMatchObject({ ok: false, code: "invalid_address" });
    expect(parseCidrValue("10.0.0.1")).toMatchObject({ ok: true, masked: false, cidr: { family: 4, network: 0x0a000001n, length: 32 } });
  });
});

describe("ip-value properties (against bigint models)", () => {
  it("valueToWords and wordsToValue are inverse", () => {
    fc.assert(
      fc.property(ipValue, ({ family: f, value }) => {
        expect(wordsToValue(valueToWords(f, value))).toBe(value);
      }),
    );
  });

  it("parseIpValue reads back what formatIpValue writes", () => {
    fc.assert(
      fc.property(ipValue, (ip) => {
        expect(parseIpValue(formatIpValue(ip))).toEqual(ip);
      }),
    );
  });

  it("parseCidrValue clears host bits as the mask says and reads back formatCidrValue", () => {
    fc.assert(
      fc.property(ipValue, fc.integer({ min: 0, max: 128 }), (ip, rawLength) => {
        const length = rawLength % (bitsOf(ip.family) + 1);
        const parsed = parseCidrValue(`${formatIpValue(ip)}/${length}`);
        const network = ip.value & ~hostMask(ip.family, length);
        expect(parsed).toEqual({ ok: true, masked: network !== ip.value, cidr: { family: ip.family, network, length } });
        if (parsed.ok) expect(parseCidrValue(formatCidrValue(parsed.cidr))).toEqual({ ok: true, masked: false, cidr: parsed.cidr });
      }),
    );
  });

  it("cidrValueContains holds exactly for the addresses under the mask", () => {
    fc.assert(
      fc.property(cidrValue, ipValue, (cidr, ip) => {
        const inside = cidr.family === ip.family && (ip.value & ~hostMask(cidr.family, cidr.length)) === cidr.network;
        expect(cidrValueContains(cidr, ip)).toBe(inside);
        if (cidr.family === ip.family)
          expect(cidrValueContains(cidr, { family: ip.family, value: cidr.network | (ip.value & hostMask(cidr.family, cidr.length)) })).toBe(true);
      }),
    );
  });

  it("appendRangeCidrValues gives the model's fewest CIDRs, the same as rangeToCidrs", () => {
    const range = family.chain((f) => fc.tuple(fc.constant(f), anyValue(f), anyValue(f)));
    fc.assert(
      fc.property(range, ([f, a, b]) => {
        const [start, end] = a <= b ? [a, b] : [b, a];
        const out: CidrValue[] = [];
        appendRangeCidrValues(f, start, end, out);
        expect(out).toEqual(modelRangeCidrs(f, start, end));
        expect(out.map(formatCidrValue)).toEqual(rangeToCidrs(formatIpValue({ family: f, value: start }), formatIpValue({ family: f, value: end })));
      }),
      { numRuns: 300 },
    );
  });
});
