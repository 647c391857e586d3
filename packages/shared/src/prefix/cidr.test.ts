import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalCidr, containsAddress, containsPrefix, familyOf, formatAddress, PrefixError, parseAddress, parseCidr, rangeToCidrs } from "./index.js";

function refusal(text: string, mode: "strict" | "mask" = "strict"): PrefixError {
  try {
    parseCidr(text, { mode });
  } catch (error) {
    expect(error).toBeInstanceOf(PrefixError);
    return error as PrefixError;
  }
  throw new Error(`${JSON.stringify(text)} was accepted`);
}

describe("parseCidr and canonicalCidr", () => {
  it.each([
    ["10.0.0.0/8", "10.0.0.0/8"],
    ["1.2.3.4", "1.2.3.4/32"],
    ["0.0.0.0/0", "0.0.0.0/0"],
    ["255.255.255.255/32", "255.255.255.255/32"],
    ["::", "::/128"],
    ["::/0", "::/0"],
    ["::1", "::1/128"],
    ["1::", "1::/128"],
    ["2001:DB8::/32", "2001:db8::/32"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1/128"],
    ["2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1/128"], // first of two equal zero runs
    ["2001:db8:0:1:0:0:0:1", "2001:db8:0:1::1/128"], // the longest run, not the first
    ["2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1/128"], // one zero group stays
    ["1:2:3:4:5:6:7::", "1:2:3:4:5:6:7:0/128"], // :: for a single group is read, not written
    ["::ffff:1.2.3.4", "::ffff:1.2.3.4/128"],
    ["::FFFF:0102:0304", "::ffff:1.2.3.4/128"], // IPv4-mapped shown dotted (RFC 5952 section 5)
    ["::ffff:0:0/96", "::ffff:0.0.0.0/96"],
    ["64:ff9b::1.2.3.4", "64:ff9b::102:304/128"], // other embedded forms are shown in hex
    ["::1.2.3.4", "::102:304/128"],
    ["fe80::/10", "fe80::/10"],
    ["ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128"],
  ])("canonicalCidr - %s is %s", (text, canonical) => {
    expect(canonicalCidr(text)).toBe(canonical);
  });

  it("parseCidr - strict refuses host bits and names the network", () => {
    const error = refusal("10.0.0.1/8");
    expect(error.code).toBe("host_bits_set");
    expect(error.message).toBe("host bits set; did you mean 10.0.0.0/8");
    expect(error.network).toBe("10.0.0.0/8");
    expect(error.input).toBe("10.0.0.1/8");
    expect(refusal("2001:db8::1/32").message).toBe("host bits set; did you mean 2001:db8::/32");
  });

  it("parseCidr - mask mode clears host bits and says it did", () => {
    const parsed = parseCidr("10.0.0.1/8", { mode: "mask" });
    expect(parsed).toMatchObject({ family: 4, length: 8, masked: true });
    expect(canonicalCidr("10.0.0.1/8", { mode: "mask" })).toBe("10.0.0.0/8");
    expect(canonicalCidr("2001:db8::ffff/112", { mode: "mask" })).toBe("2001:db8::/112");
    expect(parseCidr("10.0.0.0/8", { mode: "mask" }).masked).toBe(false);
    expect(canonicalCidr("1.2.3.4/0", { mode: "mask" })).toBe("0.0.0.0/0");
  });

  it("parseCidr - a bare address is a /32 or a /128", () => {
    expect(parseCidr("192.0.2.7")).toMatchObject({ family: 4, length: 32, masked: false });
    expect(parseCidr("2001:db8::7")).toMatchObject({ family: 6, length: 128 });
  });

  it.each([
    ["", "empty value"],
    ["1.2.3", "four decimal parts"],
    ["1.2.3.4.5", "four decimal parts"],
    ["1..2.3", "four decimal parts"],
    ["256.1.1.1", "0..255"],
    ["01.2.3.4", "leading zeros"],
    ["1.2.3.04/32", "leading zeros"],
    ["10.0.0.0/33", "0..32 for IPv4"],
    ["::1/129", "0..128 for IPv6"],
    ["10.0.0.0/", "missing"],
    ["10.0.0.0/08", "leading zero"],
    ["10.0.0.0/-1", "decimal number"],
    ["10.0.0.0/8/8", "decimal number"],
    [" 10.0.0.0/8", "spaces"],
    ["10.0.0.0/8 ", "spaces"],
    ["10.0.0.0 /8", "spaces"],
    ["2001:db8:: /32", "spaces"],
    ["1.2.3.x", "unexpected character"],
    ["1:2:3:4:5:6:7:8:9", "at most 8 groups"],
    ["1:2:3:4:5:6:7", "8 groups"],
    ["1::2::3", "only once"],
    ["12345::", "at most 4 hex digits"],
    [":1::", "empty"],
    [":::", "empty"],
    ["1::2:", "single colon"],
    ["1:2:3:4:5:6:7:8::", "at most 7 groups"],
    ["g::1", "unexpected character"],
    ["fe80::1%eth0", "unexpected character"],
    ["::ffff:1.2.3", "four decimal parts"],
    ["::ffff:1.2.3.256", "0..255"],
    ["1:2:3:4:5:6:7:1.2.3.4", "8 groups"],
    ["1.2.3.4::", "8 groups"],
  ])("parseCidr - refuses %j (%s)", (text, reason) => {
    const error = refusal(text);
    expect(error.message).toContain(reason);
    expect(refusal(text, "mask").message).toContain(reason);
  });

  it("parseCidr - a bad length is invalid_prefix_length, a bad address invalid_address", () => {
    expect(refusal("10.0.0.0/33").code).toBe("invalid_prefix_length");
    expect(refusal("1.2.3").code).toBe("invalid_address");
  });

  it("canonicalCidr - round-trips every IPv6 value it prints", () => {
    const word = fc.oneof(fc.constantFrom(0, 0xffff, 0x10000, 0xffff0000, 0xffffffff), fc.integer({ min: 0, max: 0xffffffff }));
    fc.assert(
      fc.property(fc.array(word, { minLength: 4, maxLength: 4 }), fc.integer({ min: 0, max: 128 }), (words, length) => {
        const text = formatAddress({ family: 6, words: Uint32Array.from(words) });
        expect(text).toBe(text.toLowerCase());
        expect(text).not.toMatch(/(^|:)0[0-9a-f]/);
        const again = parseAddress(text);
        expect(Array.from(again.words)).toEqual(words);
        const cidr = canonicalCidr(`${text}/${length}`, { mode: "mask" });
        expect(canonicalCidr(cidr)).toBe(cidr);
      }),
      { numRuns: 500 },
    );
  });
});

describe("parseAddress, familyOf, containment, ranges", () => {
  it("parseAddress - refuses a prefix length", () => {
    expect(() => parseAddress("10.0.0.0/8")).toThrow("no prefix length");
    expect(parseAddress("10.1.2.3").words[0]).toBe(0x0a010203);
  });

  it("familyOf - a colon means IPv6", () => {
    expect(familyOf("10.0.0.0/8")).toBe(4);
    expect(familyOf("::ffff:1.2.3.4")).toBe(6);
  });

  it("containsAddress - holds inside the prefix only, never across families", () => {
    expect(containsAddress("10.0.0.0/8", "10.255.255.255")).toBe(true);
    expect(containsAddress("10.0.0.0/8", "11.0.0.0")).toBe(false);
    expect(containsAddress("0.0.0.0/0", "255.255.255.255")).toBe(true);
    expect(containsAddress("::/0", "10.0.0.1")).toBe(false);
    expect(containsAddress("2001:db8::/32", "2001:db8:ffff::1")).toBe(true);
    expect(containsAddress("2001:db8::/33", "2001:db8:8000::")).toBe(false);
    expect(containsAddress(parseCidr("::/0"), parseAddress("::1"))).toBe(true);
  });

  it("containsPrefix - an equal prefix counts, a shorter one does not", () => {
    expect(containsPrefix("10.0.0.0/8", "10.0.0.0/8")).toBe(true);
    expect(containsPrefix("10.0.0.0/8", "10.1.0.0/16")).toBe(true);
    expect(containsPrefix("10.1.0.0/16", "10.0.0.0/8")).toBe(false);
  });

  it("rangeToCidrs - gives the fewest CIDRs of a range", () => {
    expect(rangeToCidrs("1.0.0.0", "1.0.196.255")).toEqual(["1.0.0.0/17", "1.0.128.0/18", "1.0.192.0/22", "1.0.196.0/24"]);
    expect(rangeToCidrs("0.0.0.0", "255.255.255.255")).toEqual(["0.0.0.0/0"]);
    expect(rangeToCidrs("10.0.0.1", "10.0.0.1")).toEqual(["10.0.0.1/32"]);
    expect(rangeToCidrs("::", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff")).toEqual(["::/0"]);
    expect(rangeToCidrs("::ffff:ffff", "::1:0:0")).toEqual(["::ffff:ffff/128", "::1:0:0/128"]);
    expect(rangeToCidrs("2001:db8::", "2001:db8::2")).toEqual(["2001:db8::/127", "2001:db8::2/128"]);
    expect(() => rangeToCidrs("10.0.0.2", "10.0.0.1")).toThrow("must not end before it starts");
    expect(() => rangeToCidrs("10.0.0.2", "::1")).toThrow("cannot mix");
  });
});
