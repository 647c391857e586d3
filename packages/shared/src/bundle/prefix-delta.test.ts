import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { comparePrefixes, parsePrefixTexts } from "../prefix/index.js";
import { BundleError } from "./errors.js";
import type { BundlePrefix } from "./payload.js";
import { applyPrefixDelta, applyPrefixDeltaBytes, diffPrefixColumns, diffPrefixLines, diffPrefixSplices, type LineSplice } from "./prefix-delta.js";
import { columnOf, decodePrefixSection, encodePrefixColumns, encodePrefixLines, PREFIX_DELTA_FORMAT, prefixLines, splitSection } from "./prefix-section.js";

// The edit script between two revisions' prefix lines, against a brute-force model: applied to
// the base it gives the next lines exactly, whatever the two lists are; for lists in revision
// order it keeps every line the two have in common (the fewest lines sent).

const COMMUNITIES = [["65000:100"], ["65000:200"], ["65000:100", "65000:300"], []];

/** Canonical texts: IPv4 of a few lengths over a small space (so that lists overlap), IPv6 /48 and /64. */
const v4Text = fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 3 }), fc.constantFrom(8, 16, 22, 24)).map(([a, b, len]) => {
  const addr = ((10 << 24) | (a << 16) | (b << 8)) >>> 0;
  const masked = len === 0 ? 0 : (addr & (0xffffffff << (32 - len))) >>> 0;
  return `${masked >>> 24}.${(masked >>> 16) & 255}.${(masked >>> 8) & 255}.${masked & 255}/${len}`;
});
const v6Text = fc.tuple(fc.integer({ min: 1, max: 300 }), fc.constantFrom(48, 64)).map(([x, len]) => `2001:db8:${x.toString(16)}::/${len}`);

/** Distinct texts of one family in revision order (the prefix module's order, not one of the test's own). */
function inOrder(texts: string[]): string[] {
  const distinct = [...new Set(texts)];
  const tables = parsePrefixTexts(distinct);
  const table = distinct[0]?.includes(":") ? tables.v6 : tables.v4;
  return [...distinct.keys()].sort((i, j) => comparePrefixes(table, i, table, j)).map((i) => distinct[i]!);
}

const family = (text: fc.Arbitrary<string>) =>
  fc.array(fc.tuple(text, fc.nat(COMMUNITIES.length - 1)), { maxLength: 40 }).map((pairs) => {
    const tag = new Map(pairs.map(([p, c]) => [p, c]));
    return inOrder(pairs.map(([p]) => p)).map((p): BundlePrefix => [p, COMMUNITIES[tag.get(p)!]!]);
  });

/** A revision, and the next one: some prefixes dropped, some re-tagged, some added (in order again). */
const revisions = fc
  .record({
    v4: family(v4Text),
    v6: family(v6Text),
    dropped: fc.array(fc.boolean(), { maxLength: 40 }),
    retagged: fc.array(fc.nat(COMMUNITIES.length - 1), { maxLength: 40 }),
    added4: family(v4Text),
    added6: family(v6Text),
  })
  .map(({ v4, v6, dropped, retagged, added4, added6 }) => {
    const change = (list: BundlePrefix[], added: BundlePrefix[]) => {
      const kept = new Map<string, readonly string[]>();
      list.forEach(([p, c], i) => {
        if (dropped[i]) return;
        kept.set(p, retagged[i] === undefined || retagged[i] === 0 ? c : COMMUNITIES[retagged[i]!]!);
      });
      for (const [p, c] of added) if (!kept.has(p)) kept.set(p, c);
      return inOrder([...kept.keys()]).map((p): BundlePrefix => [p, kept.get(p) as string[]]);
    };
    return { base: { v4, v6 }, next: { v4: change(v4, added4), v6: change(v6, added6) } };
  });

const linesOf = (r: { v4: BundlePrefix[]; v6: BundlePrefix[] }) => prefixLines(columnOf(r.v4), columnOf(r.v6));
const columnsOf = (r: { v4: BundlePrefix[]; v6: BundlePrefix[] }) => ({ v4: columnOf(r.v4), v6: columnOf(r.v6) });

/** Lines kept by a script: the sum of its `=N` steps. */
const keptBy = (delta: Buffer) =>
  splitSection(delta, PREFIX_DELTA_FORMAT)
    .filter((op) => op.startsWith("="))
    .reduce((n, op) => n + Number(op.slice(1)), 0);

describe("prefix delta", () => {
  it("rebuilds the next revision from the base, keeping every line the two have in common", () => {
    fc.assert(
      fc.property(revisions, ({ base, next }) => {
        const b = linesOf(base);
        const n = linesOf(next);
        const delta = diffPrefixLines(b, n);
        expect(applyPrefixDelta(b, delta)).toEqual(n);
        expect(applyPrefixDeltaBytes(encodePrefixLines(b), delta).equals(encodePrefixLines(n))).toBe(true);
        const common = new Set(b);
        expect(keptBy(delta)).toBe(n.filter((line) => common.has(line)).length);
        // From the revisions' columns, without their lines: the same script.
        expect(diffPrefixColumns(columnsOf(base), columnsOf(next)).equals(delta)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("given where the two differ (splices, as an incremental build reports them), gives the whole walk's script, and the whole diff for splices that do not add up", () => {
    /**
     * The model: the lines the two share are in the same order in both (revision order), and
     * between two of them are the runs that differ; `merges` joins neighbouring runs with the
     * shared lines between them into one (a build's ranges hold unchanged lines too).
     */
    const splicesOf = (b: string[], n: string[], merges: boolean[]): LineSplice[] => {
      const inNext = new Map(n.map((line, j) => [line, j]));
      const runs: LineSplice[] = [];
      let i = 0;
      let j = 0;
      const shared = [...b.keys()].filter((k) => inNext.has(b[k]!));
      for (const k of [...shared, b.length]) {
        const jk = k === b.length ? n.length : inNext.get(b[k]!)!;
        if (k > i || jk > j) runs.push({ from: i, to: k, at: j, count: jk - j });
        i = k + 1;
        j = jk + 1;
      }
      const out: LineSplice[] = [];
      runs.forEach((r, k) => {
        const last = out.at(-1);
        if (last && merges[k % Math.max(1, merges.length)]) out[out.length - 1] = { from: last.from, to: r.to, at: last.at, count: r.at + r.count - last.at };
        else out.push(r);
      });
      return out;
    };
    fc.assert(
      fc.property(revisions, fc.array(fc.boolean(), { maxLength: 5 }), fc.integer({ min: -2, max: 2 }), ({ base, next }, merges, skew) => {
        const b = linesOf(base);
        const n = linesOf(next);
        const whole = diffPrefixColumns(columnsOf(base), columnsOf(next));
        const splices = splicesOf(b, n, merges);
        expect(diffPrefixSplices(columnsOf(base), columnsOf(next), splices).equals(whole)).toBe(true);
        // Splices that do not add up (one moved) still give a script that rebuilds `next`.
        const wrong = splices.map((s, k) => (k === 0 ? { ...s, count: Math.max(0, s.count + skew) } : s));
        expect(applyPrefixDelta(b, diffPrefixSplices(columnsOf(base), columnsOf(next), wrong))).toEqual(n);
      }),
      { numRuns: 400 },
    );
  });

  it("gives a script that rebuilds `next` for lists in any order, prefixes or not, repeated or not", () => {
    const line = fc.tuple(fc.oneof(v4Text, v6Text, fc.constantFrom("", "x", "10.0.0.1/8", "300.1.1.1/8")), fc.constantFrom("", "65000:1", "65000:2"));
    const list = fc.array(line, { maxLength: 30 }).map((pairs) => pairs.map(([p, c]) => (p === "x" ? p : `${p}\t${c}`)));
    fc.assert(
      fc.property(list, list, (b, n) => {
        const delta = diffPrefixLines(b, n);
        expect(applyPrefixDelta(b, delta)).toEqual(n);
        expect(applyPrefixDeltaBytes(encodePrefixLines(b), delta).equals(encodePrefixLines(n))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("lists out of order still get a script of the map's size: nothing moved is sent twice", () => {
    const b = ["10.0.2.0/24\ta", "10.0.1.0/24\ta", "10.0.3.0/24\ta"];
    const n = ["10.0.1.0/24\ta", "10.0.3.0/24\ta"];
    const delta = diffPrefixLines(b, n);
    expect(applyPrefixDelta(b, delta)).toEqual(n);
    expect(keptBy(delta)).toBe(2);
  });

  it("writes a revision's section from its columns as from its lines", () => {
    fc.assert(
      fc.property(revisions, ({ next }) => {
        expect(encodePrefixColumns(columnOf(next.v4), columnOf(next.v6)).equals(encodePrefixLines(linesOf(next)))).toBe(true);
      }),
      { numRuns: 100 },
    );
    const unusual = ["2001:db8::/32\tcommunauté", "10.0.0.0/8\t"];
    expect(splitSection(encodePrefixLines(unusual))).toEqual(unusual);
  });

  it("decodes a section to the prefixes it was written from, and refuses a line without its communities", () => {
    fc.assert(
      fc.property(revisions, ({ next }) => {
        expect(decodePrefixSection(encodePrefixColumns(columnOf(next.v4), columnOf(next.v6)))).toEqual(next);
      }),
      { numRuns: 100 },
    );
    // More distinct communities than the decoder matches in place: the rest go through its map.
    const many: BundlePrefix[] = Array.from({ length: 30 }, (_, i) => [`10.${i}.0.0/16`, [`65000:${i % 12}`]]);
    const decoded = decodePrefixSection(encodePrefixColumns(columnOf(many), columnOf([])));
    expect(decoded.v4).toEqual(many);
    expect(decoded.v4[0]![1]).toBe(decoded.v4[12]![1]);
    for (const bad of ["10.0.0.0/8\n10.1.0.0/16\ta\n", "\ta\n", "10.0.0.0/8\ta"]) {
      expect(() => decodePrefixSection(Buffer.from(`rl-prefixes/1\n${bad}`))).toThrow(BundleError);
    }
  });

  it("refuses a script that does not fit the base, as bytes as well as lines", () => {
    const base = ["10.0.0.0/24\ta", "10.0.1.0/24\ta"];
    const section = encodePrefixLines(base);
    const script = (...ops: string[]) => Buffer.from(`${[PREFIX_DELTA_FORMAT, ...ops].join("\n")}\n`);
    for (const bad of [script("=3"), script("=1"), script("=0", "=2"), script("=x"), script("*2"), script("=1", "", "=1"), Buffer.from("=2\n")]) {
      expect(() => applyPrefixDelta(base, bad)).toThrow(BundleError);
      expect(() => applyPrefixDeltaBytes(section, bad)).toThrow(BundleError);
    }
    expect(() => applyPrefixDeltaBytes(Buffer.from("rl-prefixes/1\n10.0.0.0/24\ta"), script("=1"))).toThrow(BundleError);
    expect(applyPrefixDeltaBytes(section, script("-1", "=1", "+10.0.9.0/24\tb")).toString()).toBe("rl-prefixes/1\n10.0.1.0/24\ta\n10.0.9.0/24\tb\n");
  });
});
