import { excludeRanges } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildRevision, type ModuleInput } from "./revision-build.js";

// The small spaces 11.0.0.0/24 and 2a00::/120: every address of both is checked against a
// brute-force model of "announce what any module has, minus what any exclude module has".
interface P {
  fam: 4 | 6;
  off: number;
  len: number;
}
const base = { 4: 24, 6: 120 } as const;
const size = (p: P) => 2 ** (base[p.fam] + 8 - p.len);
const textOf = (p: P) => (p.fam === 4 ? `11.0.0.${p.off}/${p.len}` : `2a00::${p.off.toString(16)}/${p.len}`);
const parse = (t: string): P => {
  const v4 = /^11\.0\.0\.(\d+)\/(\d+)$/.exec(t);
  if (v4) return { fam: 4, off: Number(v4[1]), len: Number(v4[2]) };
  const v6 = /^2a00::([0-9a-f]*)\/(\d+)$/.exec(t)!;
  return { fam: 6, off: v6[1] === "" ? 0 : Number.parseInt(v6[1]!, 16), len: Number(v6[2]) };
};
const holds = (p: P, fam: 4 | 6, a: number) => p.fam === fam && a >= p.off && a < p.off + size(p);

const prefix = fc.record({ fam: fc.constantFrom<4 | 6>(4, 4, 6), rel: fc.integer({ min: 0, max: 8 }), at: fc.nat(255) }).map(({ fam, rel, at }): P => {
  const p = { fam, off: 0, len: base[fam] + rel };
  return { ...p, off: at - (at % size(p)) };
});
const modulesArb = fc
  .array(
    fc.record({
      prefixes: fc.array(prefix, { maxLength: 8 }),
      community: fc.option(fc.constantFrom("65000:1", "65000:2", "65000:3"), { nil: null }),
      exclude: fc.boolean(),
    }),
    { minLength: 1, maxLength: 6 },
  )
  .map((ms) =>
    ms.map(
      (m, i): ModuleInput => ({
        module_id: `00000000-0000-0000-0000-00000000000${i}`,
        name: `m${i}`,
        community: m.community,
        action: m.exclude ? "exclude" : "announce",
        prefixes: m.prefixes.map(textOf),
      }),
    ),
  );

const entriesOf = (built: ReturnType<typeof buildRevision>) => [...built.content.v4.map((e) => e), ...built.content.v6.map((e) => e)];

describe("exclude modules", () => {
  it("every address is announced exactly when an announcing module has it and no exclude module does, with the union of the communities of the modules that have it", () => {
    fc.assert(
      fc.property(modulesArb, (modules) => {
        const entries = entriesOf(buildRevision(modules));
        const announced = entries.map(([p, communities]) => ({ p: parse(p), communities }));
        const parsed = modules.map((m) => ({ ...m, ps: m.prefixes.map(parse) }));
        const got: string[] = [];
        const want: string[] = [];
        for (const fam of [4, 6] as const) {
          for (let a = 0; a < 256; a++) {
            const having = parsed.filter((m) => m.ps.some((p) => holds(p, fam, a)));
            const announcing = having.every((m) => m.action !== "exclude") ? having : [];
            let longest: (typeof announced)[number] | undefined;
            for (const x of announced) if (holds(x.p, fam, a) && (!longest || x.p.len > longest.p.len)) longest = x;
            got.push(`${fam}:${a} ${longest ? longest.communities.join(" ") : "-"}`);
            const communities = [...new Set(announcing.flatMap((m) => (m.community ? [m.community] : [])))].sort();
            want.push(`${fam}:${a} ${announcing.length ? communities.join(" ") : "-"}`);
          }
        }
        expect(got).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  it("gives the revision of the announcing modules with the holes cut out of each beforehand (the fewest CIDRs around each hole), and counts what it cut", () => {
    fc.assert(
      fc.property(modulesArb, (modules) => {
        const built = buildRevision(modules);
        const holes = modules.filter((m) => m.action === "exclude").flatMap((m) => m.prefixes);
        const announcing = modules.filter((m) => m.action !== "exclude");
        const cut = announcing.map((m) => ({ ...m, prefixes: holes.length ? excludeRanges(m.prefixes, holes).prefixes : m.prefixes }));
        const plain = buildRevision(cut);
        expect(entriesOf(built)).toEqual(entriesOf(plain));
        expect(built.digest).toBe(plain.digest);

        const overlaps = (a: string, b: string) => {
          const x = parse(a);
          const y = parse(b);
          return x.fam === y.fam && x.off < y.off + size(y) && y.off < x.off + size(x);
        };
        const distinct = (ps: readonly string[]) => [...new Set(ps)];
        const union = distinct(announcing.flatMap((m) => m.prefixes));
        expect(built.dropped_prefix_count).toBe(union.filter((p) => holes.some((h) => overlaps(p, h))).length);
        for (const m of modules) {
          const row = built.modules.find((x) => x.module_id === m.module_id)!;
          const own =
            m.action === "exclude"
              ? union.filter((p) => m.prefixes.some((h) => overlaps(p, h)))
              : distinct(m.prefixes).filter((p) => holes.some((h) => overlaps(p, h)));
          expect(row).toMatchObject({ action: m.action, excluded_prefix_count: own.length });
          if (m.action === "exclude") expect(row.prefix_count).toBe(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});
