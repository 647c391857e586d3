import { parseCidr } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseVrpDocument, type RpkiState, VrpIndex } from "./rpki-vrps.js";

// The brute-force model: RFC 6811 §2 read literally, over a list.
interface Roa {
  network: bigint;
  length: number;
  family: 4 | 6;
  asn: number;
  maxLength: number;
}
const bits = (f: 4 | 6) => (f === 4 ? 32 : 128);
const maskOf = (v: bigint, len: number, f: 4 | 6) => (len === 0 ? 0n : (v >> BigInt(bits(f) - len)) << BigInt(bits(f) - len));

function model(roas: Roa[], route: { network: bigint; length: number; family: 4 | 6 }, origin: number): RpkiState {
  const covering = roas.filter((r) => r.family === route.family && r.length <= route.length && maskOf(route.network, r.length, r.family) === r.network);
  if (covering.length === 0) return "not_found";
  return covering.some((r) => origin !== 0 && r.asn === origin && route.length <= r.maxLength) ? "valid" : "invalid";
}

function text(network: bigint, length: number, family: 4 | 6): string {
  if (family === 4) return `${[24n, 16n, 8n, 0n].map((s) => (network >> s) & 255n).join(".")}/${length}`;
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((network >> BigInt(i * 16)) & 0xffffn).toString(16));
  return `${groups.join(":")}/${length}`;
}

/** A CIDR text (a length required) as the model's route; null for anything else. */
function parsed(t: string): { network: bigint; length: number; family: 4 | 6 } | null {
  try {
    const p = parseCidr(t, { mode: "mask" });
    let network = 0n;
    for (const w of p.words) network = (network << 32n) | BigInt(w);
    return t.includes("/") ? { network, length: p.length, family: p.family } : null;
  } catch {
    return null;
  }
}

// Addresses from a small space (a few bits varied under a fixed top) so that VRPs and routes overlap often.
const arbPrefix = (family: 4 | 6) =>
  fc
    .record({ high: fc.integer({ min: 0, max: 15 }), length: fc.integer({ min: family === 4 ? 4 : 16, max: family === 4 ? 32 : 64 }) })
    .map(({ high, length }) => {
      const top = family === 4 ? 0x0a000000n : 0x20010db8n << 96n;
      const shift = BigInt(bits(family) - (family === 4 ? 12 : 40));
      const network = maskOf(top | (BigInt(high) << shift), length, family);
      return { network, length, family };
    });
const arbAsn = fc.constantFrom(0, 13335, 15169, 64500);
/** A VRP on a prefix of `prefixes`, its maxLength up to `extra` bits longer (and within the family). */
const roaOn = (prefixes: fc.Arbitrary<{ network: bigint; length: number; family: 4 | 6 }>, extra: number): fc.Arbitrary<Roa> =>
  fc.tuple(prefixes, arbAsn, fc.integer({ min: 0, max: extra })).map(([p, asn, more]) => ({ ...p, asn, maxLength: Math.min(bits(p.family), p.length + more) }));

/** VRPs and routes drawn from `prefixes`: the index decides each route as the brute-force model does. */
function decidesAsModel(prefixes: fc.Arbitrary<{ network: bigint; length: number; family: 4 | 6 }>, extra: number, maxRoas: number) {
  fc.assert(
    fc.property(
      fc.array(roaOn(prefixes, extra), { maxLength: maxRoas }),
      fc.array(fc.tuple(prefixes, arbAsn), { minLength: 1, maxLength: 30 }),
      (roas, routes) => {
        const index = new VrpIndex();
        for (const r of roas) expect(index.add(text(r.network, r.length, r.family), r.asn, r.maxLength)).toBe(true);
        for (const [route, origin] of routes) {
          expect(index.validate(text(route.network, route.length, route.family), origin)).toBe(model(roas, route, origin));
        }
      },
    ),
    { numRuns: 300 },
  );
}

describe("RFC 6811 origin validation", () => {
  for (const family of [4, 6] as const) {
    it(`IPv${family}: the index decides as the brute-force model does`, () => decidesAsModel(arbPrefix(family), 24, 30));
  }

  // Over the whole length range, addresses at the edges of the space (all zeros, all ones, the
  // middle) so that /0 VRPs, host routes and VRPs nested many deep meet.
  const arbEdgePrefix = (family: 4 | 6) =>
    fc.record({ base: fc.integer({ min: 0, max: 3 }), length: fc.integer({ min: 0, max: bits(family) }) }).map(({ base, length }) => {
      const all = (1n << BigInt(bits(family))) - 1n;
      const network = maskOf([0n, all, 1n << BigInt(bits(family) - 1), all >> 1n][base]!, length, family);
      return { network, length, family };
    });
  for (const family of [4, 6] as const) {
    it(`IPv${family}: /0, host routes and deep nesting decide as the model does`, () => decidesAsModel(arbEdgePrefix(family), bits(family), 40));
  }

  // The refresh's pass: many routes of both families, in groups by origin, validated at once in
  // the index's bucket order, with texts that are not CIDRs among them.
  const arbRoute = fc.oneof(
    arbPrefix(4).map((p) => text(p.network, p.length, p.family)),
    arbPrefix(6).map((p) => text(p.network, p.length, p.family)),
    arbEdgePrefix(4).map((p) => text(p.network, p.length, p.family)),
    arbEdgePrefix(6).map((p) => text(p.network, p.length, p.family)),
    fc.constantFrom("10.0.0.1", "2001:db8::1", "10.0.0.0/33", "::/129", "bad", "", "10.00.0.0/8", "2001:DB8::/32", "::ffff:10.0.0.0/104"),
  );
  it("validateAll decides every route of every group as the brute-force model does", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(roaOn(arbPrefix(4), 24), roaOn(arbPrefix(6), 24)), { maxLength: 40 }),
        fc.array(fc.record({ origin: fc.oneof(arbAsn, fc.constantFrom(-1, 4294967295, 4294967296, 1.5)), prefixes: fc.array(arbRoute, { maxLength: 12 }) }), {
          maxLength: 8,
        }),
        (roas, groups) => {
          const index = new VrpIndex();
          for (const r of roas) index.add(text(r.network, r.length, r.family), r.asn, r.maxLength);
          const codes = index.validateAll(groups);
          const states = ["not_found", "valid", "invalid", null];
          expect([...codes].map((c) => states[c])).toEqual(groups.flatMap((g) => g.prefixes.map((p) => index.validate(p, g.origin))));
          let slot = 0;
          for (const g of groups) {
            for (const p of g.prefixes) {
              const route = parsed(p);
              expect(states[codes[slot]!], p).toBe(route ? model(roas, route, g.origin) : null);
              slot++;
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("nested VRPs, one prefix with several origins and maxLengths, /0, /32, /128 and AS0", () => {
    const index = new VrpIndex();
    index.add("10.0.0.0/8", 64500, 8);
    index.add("10.1.0.0/16", 64501, 24);
    index.add("10.1.0.0/16", 64502, 16);
    index.add("10.1.0.0/16", 64501, 20);
    index.add("10.1.2.0/24", 64503, 32);
    index.add("10.1.2.3/32", 0, 32);
    // Each level of the nesting decides by its own and its containers' VRPs.
    expect(index.validate("10.0.0.0/8", 64500)).toBe("valid");
    expect(index.validate("10.2.0.0/16", 64500)).toBe("invalid");
    expect(index.validate("10.1.5.0/24", 64501)).toBe("valid");
    expect(index.validate("10.1.5.0/25", 64501)).toBe("invalid");
    expect(index.validate("10.1.0.0/16", 64502)).toBe("valid");
    expect(index.validate("10.1.0.0/17", 64502)).toBe("invalid");
    expect(index.validate("10.1.2.0/24", 64501)).toBe("valid");
    expect(index.validate("10.1.2.3/32", 64503)).toBe("valid");
    expect(index.validate("10.1.2.3/32", 64501)).toBe("invalid");
    // An AS0 VRP covers but never matches; an origin of 0 is never valid.
    expect(index.validate("10.1.2.3/32", 0)).toBe("invalid");
    expect(index.validate("11.0.0.0/8", 64500)).toBe("not_found");
    expect(index.validate("9.255.255.255/32", 64500)).toBe("not_found");
    // A VRP added after a validation counts at the next one.
    index.add("0.0.0.0/0", 64599, 32);
    expect(index.validate("11.0.0.0/8", 64500)).toBe("invalid");
    expect(index.validate("255.255.255.255/32", 64599)).toBe("valid");
    expect(index.validate("0.0.0.0/0", 64599)).toBe("valid");
    expect(index.validate("0.0.0.0/0", 64500)).toBe("invalid");
    // IPv6: the families do not mix; /0 and /128 at both ends of the space.
    expect(index.validate("::/0", 64599)).toBe("not_found");
    index.add("::/0", 64510, 0);
    index.add("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 64511, 128);
    index.add("2001:db8::/32", 64512, 48);
    index.add("2001:db8::/32", 64513, 128);
    expect(index.validate("::/0", 64510)).toBe("valid");
    expect(index.validate("::1/128", 64510)).toBe("invalid");
    expect(index.validate("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", 64511)).toBe("valid");
    expect(index.validate("ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/128", 64511)).toBe("invalid");
    expect(index.validate("2001:db8:1::/48", 64512)).toBe("valid");
    expect(index.validate("2001:db8:1::/64", 64512)).toBe("invalid");
    expect(index.validate("2001:db8:1::1/128", 64513)).toBe("valid");
    expect(index.validate("2001:db8:1::/64", 0)).toBe("invalid");
    // Not a CIDR: no state.
    expect(index.validate("10.1.2.3", 64503)).toBeNull();
    expect(index.validate("10.1.2.0/33", 64503)).toBeNull();
    expect(index.validate("2001:db8::/129", 64512)).toBeNull();
    expect(index.add("10.0.0.0/8", 64500, 7)).toBe(false);
    expect(index.add("2001:db8::/32", 64500, 129)).toBe(false);
    expect(index.size).toBe(11);
  });

  it("reads rpki-client's and Routinator's documents: valid, invalid by origin, invalid by length, not found", () => {
    const rpkiClient = parseVrpDocument(
      JSON.stringify({
        metadata: { buildtime: "2026-11-27T08:00:00Z", roas: 2 },
        roas: [
          { asn: 13335, prefix: "1.1.1.0/24", maxLength: 24, ta: "apnic" },
          { asn: 13335, prefix: "2606:4700::/32", maxLength: 48, ta: "arin" },
          { asn: 13335, prefix: "bad", maxLength: 24, ta: "x" },
        ],
      }),
    );
    expect(rpkiClient.generatedAt.toISOString()).toBe("2026-11-27T08:00:00.000Z");
    expect(rpkiClient.skipped).toBe(1);
    const routinator = parseVrpDocument(
      JSON.stringify({
        metadata: { generated: 1795766400, generatedTime: "2026-11-27T08:00:00Z" },
        roas: [{ asn: "AS13335", prefix: "1.1.1.0/24", maxLength: 24, ta: "apnic" }],
      }),
    );
    expect(routinator.generatedAt.getTime()).toBe(1795766400 * 1000);
    for (const { index } of [rpkiClient, routinator]) {
      expect(index.validate("1.1.1.0/24", 13335)).toBe("valid");
      expect(index.validate("1.1.1.0/24", 64500)).toBe("invalid");
      expect(index.validate("1.1.1.0/25", 13335)).toBe("invalid");
      expect(index.validate("8.8.8.0/24", 15169)).toBe("not_found");
    }
    expect(rpkiClient.index.validate("2606:4700:10::/44", 13335)).toBe("valid");
    expect(rpkiClient.index.validate("2606:4700:10::/56", 13335)).toBe("invalid");
  });

  it("refuses a document that is not JSON, has no roas or no build time", () => {
    expect(() => parseVrpDocument("<html>")).toThrow(/not JSON/);
    expect(() => parseVrpDocument(JSON.stringify({ metadata: { buildtime: "2026-11-27T08:00:00Z" } }))).toThrow(/no roas/);
    expect(() => parseVrpDocument(JSON.stringify({ roas: [] }))).toThrow(/when it was built/);
  });
});
