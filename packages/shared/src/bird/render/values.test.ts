import { isIPv4 } from "node:net";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { prefix } from "./values.js";

/** What a render must answer for an IPv4 prefix, by the plain rule: Node's address check, then the host bits as a BigInt. */
function model(value: string): { ok: string } | { error: string } {
  const [address, len, extra] = value.split("/");
  if (extra !== undefined || address === undefined || len === undefined || !/^\d{1,3}$/.test(len) || Number(len) > 32 || !isIPv4(address)) {
    return { error: `"${value}" is not an IPv4 prefix` };
  }
  const bits = address.split(".").reduce((acc, o) => (acc << 8n) | BigInt(o), 0n);
  if (bits & ((1n << BigInt(32 - Number(len))) - 1n)) return { error: `"${value}" has host bits set` };
  return { ok: `${address}/${Number(len)}` };
}

function answer(value: string): { ok: string } | { error: string } {
  try {
    return { ok: prefix(value, 4, "p") };
  } catch (error) {
    return { error: (error as Error).message.replace(/^p: /, "") };
  }
}

const number = fc.oneof(
  fc.integer({ min: 0, max: 255 }).map(String),
  fc.integer({ min: 0, max: 999 }).map(String),
  fc.constantFrom("00", "01", "007", "", "a", "-1", "1e2"),
);
const separator = fc.constantFrom(".", ".", ".", ".", ",", "..", "");
const v4ish = fc
  .tuple(number, separator, number, separator, number, separator, number, fc.constantFrom("/", "/", "/", "//", ""), number, fc.constantFrom("", "", " ", "/1"))
  .map((parts) => parts.join(""));
// Real prefixes with their host bits cleared, most of what a revision holds.
const clean = fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 32 })).map(([bits, len]) => {
  const masked = len === 0 ? 0 : (bits & (0xffffffff << (32 - len))) >>> 0;
  return `${masked >>> 24}.${(masked >>> 16) & 255}.${(masked >>> 8) & 255}.${masked & 255}/${len}`;
});

describe("prefix (IPv4)", () => {
  it("accepts and refuses exactly what the plain rule does, with the same message", () => {
    fc.assert(
      fc.property(fc.oneof(v4ish, clean), (value) => {
        expect(answer(value)).toEqual(model(value));
      }),
      { numRuns: 20_000 },
    );
  });

  it("keeps the spelling of a plain prefix and names the faults", () => {
    expect(prefix("10.0.0.0/8", 4, "p")).toBe("10.0.0.0/8");
    expect(prefix("0.0.0.0/0", 4, "p")).toBe("0.0.0.0/0");
    expect(prefix("255.255.255.255/32", 4, "p")).toBe("255.255.255.255/32");
    expect(() => prefix("10.0.0.1/8", 4, "p")).toThrow("has host bits set");
    expect(() => prefix("10.0.0.0/33", 4, "p")).toThrow("is not an IPv4 prefix");
    expect(() => prefix("256.0.0.0/8", 4, "p")).toThrow("is not an IPv4 prefix");
    expect(() => prefix("10.0.0.0", 4, "p")).toThrow("is not an IPv4 prefix");
  });
});
