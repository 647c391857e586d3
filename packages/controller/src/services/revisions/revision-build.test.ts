import { createHash } from "node:crypto";
import { canonicalCidr, containsPrefix, formatPrefix, parseCidr, parsePrefixTexts, removeBogons } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BogonSettings, buildRevision, type ModuleInput } from "./revision-build.js";
import { compactContent, contentFromEntries, type RevisionEntry, RevisionFamily, withdrawnCount } from "./revision-content.js";
import { digestOf, flatDigestOf } from "./revision-digest.js";
import { decodeContent, encodeContent } from "./revision-encoding.js";
import { modelEntries, settingsOf, smallV4, smallV6 } from "./revision-model.test-helper.js";

// Small address spaces, so a brute-force model can check every pair: 11.0.0.0/24 (lengths
// 24..32) and 2a00::/120 (120..128), plus a few prefixes outside them (short, bogon).
const v4 = smallV4;
const v6 = smallV6;
const odd = fc.constantFrom("10.1.0.0/16", "0.0.0.0/0", "11.0.0.0/7", "11.0.0.77/24", "2a00::/8", "fc00::/7");
const prefixes = fc.array(fc.oneof({ weight: 6, arbitrary: v4 }, { weight: 3, arbitrary: v6 }, { weight: 1, arbitrary: odd }), { maxLength: 14 });
const community = fc.option(fc.constantFrom("65000:1", "65000:2", "65000:3"), { nil: null });
const modulesArb = fc
  .array(fc.record({ prefixes, community }), { minLength: 1, maxLength: 5 })
  .map((ms) =>
    ms.map((m, i): ModuleInput => ({ module_id: `00000000-0000-0000-0000-00000000000${9 - i}`, name: `m${i}`, community: m.community, prefixes: m.prefixes })),
  );
const birdArb: fc.Arbitrary<BogonSettings> = fc.record({
  min_prefix_length_v4: fc.constantFrom(8, 8, 26),
  min_prefix_length_v6: fc.constantFrom(16, 16, 122),
  exclude_prefixes: fc.constantFrom(undefined, ["11.0.0.64/27", "2a00::40/123"], ["11.0.0.128/25", "11.0.0.0/30"]),
});
/** The digest's definition (scheme 2), from the prefixes' texts: lines grouped by the address's top 12 (IPv4) or 20 (IPv6) bits. */
function groupedDigestModel(tuples: readonly (readonly [string, readonly string[]])[]): string {
  const v6Words = (address: string) => {
    const [head, tail] = address.includes("::") ? address.split("::") : [address, null];
    const h = head ? head.split(":") : [];
    const t = tail ? tail.split(":") : [];
    const fill = tail === null ? [] : new Array(8 - h.length - t.length).fill("0");
    return [...h, ...fill, ...t].map((x) => Number.parseInt(x || "0", 16));
  };
  const groupOf = (prefix: string): [number, number] => {
    const address = prefix.split("/")[0]!;
    if (address.includes(":")) {
      const w = v6Words(address);
      return [6, (w[0]! << 4) | (w[1]! >> 12)];
    }
    const [a, b] = address.split(".").map(Number);
    return [4, (a! << 4) | (b! >> 4)];
  };
  const groups: { family: number; key: number; text: string }[] = [];
  for (const [p, c] of tuples) {
    const [family, key] = groupOf(p);
    const last = groups[groups.length - 1];
    if (last && last.family === family && last.key === key) last.text += `${p} ${c.join(",")}\n`;
    else groups.push({ family, key, text: `${p} ${c.join(",")}\n` });
  }
  const records = groups.map((g) => {
    const r = Buffer.alloc(5);
    r[0] = g.family;
    r.writeUInt32BE(g.key, 1);
    return Buffer.concat([r, createHash("sha256").update(g.text).digest()]);
  });
  return `sha256:${createHash("sha256").update(Buffer.concat(records)).digest("hex")}`;
}

describe("buildRevision", () => {
  it("attributes each module to the prefixes that contain its prefixes or are their longest announcement, as the brute-force model does", () => {
    fc.assert(
      fc.property(modulesArb, birdArb, (modules, bird) => {
        const built = buildRevision(modules, bird);
        const entries = [...built.content.v4.map((e) => e), ...built.content.v6.map((e) => e)];
        expect(entries).toEqual(modelEntries(modules, bird));
      }),
      { numRuns: 400 },
    );
  });

  it("counts distinct collected prefixes, those the bogon filter drops or cuts, and each module's prefixes, as a filter over the union would", () => {
    fc.assert(
      fc.property(modulesArb, birdArb, (modules, bird) => {
        const built = buildRevision(modules, bird);
        const union = [...new Set(modules.flatMap((m) => m.prefixes.map((p) => canonicalCidr(p, { mode: "mask" }))))];
        const filter = removeBogons(union, settingsOf(bird));
        expect(built.input_prefix_count).toBe(union.length);
        expect(built.dropped_prefix_count).toBe(filter.dropped + filter.cut);
        const entries = [...built.content.v4.map((e) => e), ...built.content.v6.map((e) => e)];
        for (const m of modules) {
          const distinct = new Set(m.prefixes.map((p) => canonicalCidr(p, { mode: "mask" })));
          expect(built.collected.get(m.module_id)).toEqual({
            v4: [...distinct].filter((p) => !p.includes(":")).length,
            v6: [...distinct].filter((p) => p.includes(":")).length,
          });
          expect(built.modules.find((x) => x.module_id === m.module_id)!.prefix_count).toBe(entries.filter((e) => e[2].includes(m.module_id)).length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("keeps the digest of the tuple form and survives encode and decode whole", () => {
    fc.assert(
      fc.property(modulesArb, (modules) => {
        const built = buildRevision(modules);
        const tuples = [...built.content.v4.map((e) => e), ...built.content.v6.map((e) => e)];
        const text = tuples.map(([p, c]) => `${p} ${c.join(",")}\n`).join("");
        expect(built.digest).toBe(groupedDigestModel(tuples));
        // Scheme 1, which revisions stored before it have: the SHA-256 of the lines.
        expect(flatDigestOf(built.content)).toBe(`sha256:${createHash("sha256").update(text).digest("hex")}`);
        const bytes = encodeContent(built.content);
        const back = decodeContent(bytes);
        expect([...back.v4.map((e) => e), ...back.v6.map((e) => e)]).toEqual(tuples);
        // Written from the build's parsed prefixes, and from the decoded strings alone: the same bytes.
        expect(built.content.v4.table).not.toBeNull();
        const owner = { modules: back.modules, tags: back.tags };
        const textsOnly = {
          ...owner,
          v4: new RevisionFamily(back.v4.texts(), back.v4.tags, owner),
          v6: new RevisionFamily(back.v6.texts(), back.v6.tags, owner),
        };
        expect(textsOnly.v4.table).toBeNull();
        expect(encodeContent(textsOnly).equals(bytes)).toBe(true);
        expect(digestOf(textsOnly)).toBe(built.digest);
        // Decoded, it is parsed too, and once compact (its texts let go) it answers the same.
        expect(back.v4.table).not.toBeNull();
        compactContent(back);
        expect(back.v4.hasTexts).toBe(false);
        expect([...back.v4.map((e) => e), ...back.v6.map((e) => e)]).toEqual(tuples);
        expect(encodeContent(back).equals(bytes)).toBe(true);
        expect(digestOf(back)).toBe(built.digest);
      }),
      { numRuns: 100 },
    );
  });

  it("shares one tag among the prefixes of the same communities and modules", () => {
    const built = buildRevision([
      { module_id: "a", name: "a", community: "65000:1", prefixes: ["11.0.0.0/24", "12.0.0.0/24", "13.0.0.0/24"] },
      { module_id: "b", name: "b", community: "65000:2", prefixes: ["11.0.0.0/25", "12.0.0.0/25", "2a00::/32"] },
    ]);
    expect(built.content.modules).toEqual(["a", "b"]);
    expect(built.content.tags).toHaveLength(3); // {1}+a, {1,2}+a,b, {2}+b
    expect(built.content.v4.at(1)).toEqual(["11.0.0.0/25", ["65000:1", "65000:2"], ["a", "b"]]);
  });
});

describe("withdrawnCount", () => {
  it("counts the prefixes of the current revision that no prefix of the next one contains", () => {
    const entry = (p: string): RevisionEntry => [p, [], []];
    const list = fc
      .uniqueArray(fc.oneof(v4, v6), { maxLength: 12 })
      .map((ps) => ps.sort((a, b) => Number(a.includes(":")) - Number(b.includes(":")) || compareText(a, b)));
    fc.assert(
      fc.property(list, list, (a, b) => {
        const current = contentFromEntries(a.filter((p) => !p.includes(":")).map(entry), a.filter((p) => p.includes(":")).map(entry));
        const next = contentFromEntries(b.filter((p) => !p.includes(":")).map(entry), b.filter((p) => p.includes(":")).map(entry));
        expect(withdrawnCount(current, next)).toBe(a.filter((p) => !b.some((q) => containsPrefix(q, p))).length);
      }),
      { numRuns: 300 },
    );
  });
});

// Address order for the model's lists: numeric on the last group, then length.
function compareText(a: string, b: string): number {
  const [x, lx] = a.split("/");
  const [y, ly] = b.split("/");
  const num = (t: string) => (t.includes(":") ? Number.parseInt(t.split(":").pop() || "0", 16) : Number(t.split(".").pop()));
  return num(x!) - num(y!) || Number(lx) - Number(ly);
}

describe("parsePrefixTexts", () => {
  it("reads IPv4 text as the shared parser does in mask mode, and refuses what it refuses", () => {
    const octet = fc.oneof(fc.integer({ min: 0, max: 300 }).map(String), fc.constantFrom("00", "01", "007", "", "a", " 1"));
    const text = fc
      .tuple(
        octet,
        octet,
        octet,
        octet,
        fc.option(fc.oneof(fc.integer({ min: 0, max: 40 }).map(String), fc.constantFrom("", "08", "1 ", "-1")), { nil: undefined }),
      )
      .map(([a, b, c, d, len]) => `${a}.${b}.${c}.${d}${len === undefined ? "" : `/${len}`}`);
    fc.assert(
      fc.property(text, (t) => {
        let expected: string | null = null;
        try {
          expected = formatPrefix(parseCidr(t, { mode: "mask" }));
        } catch {}
        let got: string | null = null;
        try {
          const { v4 } = parsePrefixTexts([t]);
          got = formatPrefix({ family: 4, words: v4.words.subarray(0, 1), length: v4.lens[0]! });
        } catch {}
        expect(got).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });
});
