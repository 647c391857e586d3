import { parsePrefixTexts } from "@rlc/shared/prefix";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { alignContents, alignSpliced, alignTables, uncoveredByLookup, withdrawnFrom } from "./revision-align.js";
import { type BogonSettings, type BuiltRevision, buildRevision, type ModuleInput } from "./revision-build.js";
import { encodeChange, makeChange, tagWalkSpliced } from "./revision-change.js";
import { type RevisionContent, uncovered, withdrawnCount } from "./revision-content.js";
import { decodeContent, encodeContent } from "./revision-encoding.js";
import { type BuildState, buildWithState, rebuildRevision } from "./revision-incremental.js";
import { modelEntries } from "./revision-model.test-helper.js";
import { firstAppearances } from "./revision-splice.js";

// Small address spaces (11.0.0.0/22 with lengths 22..32, 2a00::/118 with 118..128) and short
// blocks (/28, /124), so that random edits cross blocks, widen them past wide prefixes, and
// merge whole blocks with their siblings; plus a few short and bogon prefixes.
const v4 = fc.record({ off: fc.integer({ min: 0, max: 1023 }), len: fc.integer({ min: 22, max: 32 }) }).map(({ off, len }) => {
  const n = off & ~(2 ** (32 - len) - 1);
  return `11.0.${n >> 8}.${n & 255}/${len}`;
});
const v6 = fc
  .record({ off: fc.integer({ min: 0, max: 1023 }), len: fc.integer({ min: 118, max: 128 }) })
  .map(({ off, len }) => `2a00::${(off & ~(2 ** (128 - len) - 1)).toString(16)}/${len}`);
const odd = fc.constantFrom("10.1.0.0/16", "11.0.0.0/8", "11.0.0.77/24", "11.0.2.0/23", "2a00::/8", "fc00::/7", "11.0.1.0/24");
const prefixes = fc.array(fc.oneof({ weight: 8, arbitrary: v4 }, { weight: 3, arbitrary: v6 }, { weight: 1, arbitrary: odd }), { maxLength: 30 });
const community = fc.option(fc.constantFrom("65000:1", "65000:2", "65000:3"), { nil: null });
const bird: fc.Arbitrary<BogonSettings> = fc.record({
  min_prefix_length_v4: fc.constantFrom(8, 8, 23),
  min_prefix_length_v6: fc.constantFrom(16, 16, 119),
  exclude_prefixes: fc.constantFrom(undefined, ["11.0.0.64/27", "2a00::40/123"], ["11.0.3.128/25", "11.0.0.0/30"]),
});
const scenario = fc
  .record({ modules: fc.array(fc.record({ prefixes, community }), { minLength: 1, maxLength: 6 }), bird, edits: fc.integer({ min: 1, max: 3 }) })
  .chain(({ modules, bird, edits }) => {
    const input = modules.map(
      (m, i): ModuleInput => ({ module_id: `00000000-0000-0000-0000-00000000000${9 - i}`, name: `m${i}`, community: m.community, prefixes: m.prefixes }),
    );
    // A sequence of edits, each of one or two modules.
    const step = fc.record({ which: fc.uniqueArray(fc.integer({ min: 0, max: input.length - 1 }), { minLength: 1, maxLength: 2 }), seed: fc.integer() });
    return fc.tuple(fc.constant(input), fc.constant(bird), fc.array(step, { minLength: edits, maxLength: edits }));
  });

const BLOCKS = { v4: 28, v6: 124 };

function expectSame(inc: BuiltRevision, full: BuiltRevision) {
  expect(encodeContent(inc.content).equals(encodeContent(full.content))).toBe(true);
  expect(inc.content.tags).toEqual(full.content.tags);
  expect(inc.digest).toBe(full.digest);
  expect(inc.input_prefix_count).toBe(full.input_prefix_count);
  expect(inc.dropped_prefix_count).toBe(full.dropped_prefix_count);
  expect(inc.modules).toEqual(full.modules);
  expect([...inc.collected]).toEqual([...full.collected]);
}

/** `next` holds `parent`'s entries outside the ranges the change names, in order. */
function expectChange(parent: RevisionContent, next: RevisionContent, change: BuiltRevision["change"]) {
  expect(change!.parent).toBe(parent);
  for (const fam of ["v4", "v6"] as const) {
    let pi = 0;
    let ni = 0;
    const keep = (to: number) => {
      for (; pi < to; pi++, ni++) expect(next[fam].at(ni)).toEqual(parent[fam].at(pi));
    };
    for (const c of change![fam]) {
      keep(c.from);
      expect(ni).toBe(c.at);
      pi = c.to;
      ni = c.at + c.count;
    }
    keep(parent[fam].length);
    expect(ni).toBe(next[fam].length);
  }
}

// Blocks under short prefixes of other modules, inside that merge into the block: modules that
// also hold covering prefixes (up to a /16), share communities or have none, and edits that add
// all four quarters of a /26 or a /122 (so that a block fills up and merges with its sibling).
const cover = fc.constantFrom(
  "11.0.0.0/16",
  "11.0.0.0/20",
  "11.0.0.0/22",
  "11.0.2.0/23",
  "11.0.1.0/24",
  "11.0.0.0/26",
  "11.0.0.64/26",
  "2a00::/112",
  "2a00::/118",
);
const quarters = fc.oneof(
  fc.integer({ min: 0, max: 15 }).map((k) => [0, 1, 2, 3].map((q) => `11.0.${k >> 2}.${(k & 3) * 64 + q * 16}/28`)),
  fc.integer({ min: 0, max: 15 }).map((k) => [0, 1, 2, 3].map((q) => `2a00::${(k * 64 + q * 16).toString(16)}/124`)),
);
const rich = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: v4.map((p) => [p]) },
      { weight: 2, arbitrary: v6.map((p) => [p]) },
      { weight: 2, arbitrary: cover.map((p) => [p]) },
      { weight: 2, arbitrary: quarters },
    ),
    {
      maxLength: 12,
    },
  )
  .map((xs) => xs.flat());
const richScenario = fc.record({
  modules: fc.array(fc.record({ prefixes: rich, community: fc.option(fc.constantFrom("65000:1", "65000:2"), { nil: null }) }), { minLength: 1, maxLength: 5 }),
  bird,
  bits: fc.constantFrom({ v4: 24, v6: 120 }, { v4: 26, v6: 122 }, { v4: 28, v6: 124 }, { v4: 30, v6: 126 }),
  steps: fc.array(fc.record({ which: fc.integer({ min: 0, max: 4 }), keep: fc.integer(), add: rich }), { minLength: 1, maxLength: 5 }),
});

/** Runs a rich scenario's edits through rebuildRevision; `check` sees each rebuild, its input and the state it was made from. */
function rebuildSteps(
  {
    modules,
    bird,
    bits,
    steps,
  }: {
    modules: Omit<ModuleInput, "module_id" | "name">[];
    bird: BogonSettings;
    bits: { v4: number; v6: number };
    steps: { which: number; keep: number; add: string[] }[];
  },
  check: (inc: NonNullable<ReturnType<typeof rebuildRevision>>, current: ModuleInput[], state: BuildState) => void,
): { current: ModuleInput[]; state: BuildState } {
  let current = modules.map((m, i): ModuleInput => ({ module_id: `00000000-0000-0000-0000-00000000000${i}`, name: `m${i}`, ...m }));
  let state: BuildState = buildWithState(current, bird).state!;
  for (const [n, step] of steps.entries()) {
    const which = step.which % current.length;
    current = current.map((m, i) => (i === which ? { ...m, prefixes: [...m.prefixes.filter((_, k) => (step.keep >> k) & 1), ...step.add] } : m));
    // Every other step finds the tags whose first prefix was replaced in one pass, not by searches;
    // every other pair of steps renumbers every kept prefix rather than fix the moved tags' in place.
    const inc = rebuildRevision(state, current, bird, new Set([current[which]!.module_id]), {
      blockBits: bits,
      ...(n % 2 ? { tagSearches: 0 } : {}),
      ...((n >> 1) % 2 ? { tagFixups: 0 } : {}),
    })!;
    // Where each tag first appears, kept through the splices: what a pass over the new content finds.
    expect(Array.from(inc.state.firstAt)).toEqual(Array.from(firstAppearances(inc.state.content)));
    check(inc, current, state);
    state = inc.state;
  }
  return { current, state };
}

describe("rebuildRevision", () => {
  it("gives the full build's revision, and the brute-force model's entries, where other modules' short prefixes cover the blocks and blocks fill up; the change it names is the difference", () => {
    const numbered = { kept: 0, fixed: 0, renumbered: 0 };
    fc.assert(
      fc.property(richScenario, (scenario) => {
        const { bird } = scenario;
        const { current, state } = rebuildSteps(scenario, (inc, current, state) => {
          numbered[inc.tagNumbers]++;
          expectSame(inc.built, buildRevision(current, bird));
          expectChange(state.content, inc.built.content, inc.built.change);
        });
        expect([...state.content.v4.map((e) => e), ...state.content.v6.map((e) => e)]).toEqual(modelEntries(current, bird));
      }),
      { numRuns: 150 },
    );
    // Each way of numbering the kept tags is taken.
    expect(Math.min(numbered.kept, numbered.fixed, numbered.renumbered)).toBeGreaterThan(0);
  }, 120_000);

  it("fixes in place the kept prefixes of the few tags whose numbers move, as renumbering every kept prefix gives, and renumbers when told to", () => {
    const slash24s = (a: number, n: number) => Array.from({ length: n }, (_, k) => `11.${a}.${k}.0/24`);
    // a's first prefix comes before b's; without it b's tag is first: both tags move.
    const input: ModuleInput[] = [
      { module_id: "a", name: "a", community: "65000:1", prefixes: ["11.0.0.0/24", ...slash24s(2, 10)] },
      { module_id: "b", name: "b", community: "65000:2", prefixes: [...slash24s(1, 10), ...slash24s(3, 10)] },
      { module_id: "c", name: "c", community: "65000:3", prefixes: ["2a00::/48", ...slash24s(4, 10)] },
    ];
    const state = buildWithState(input, {}).state!;
    const next = [{ ...input[0]!, prefixes: input[0]!.prefixes.slice(1) }, input[1]!, input[2]!];
    const full = buildRevision(next, {});
    const fixed = rebuildRevision(state, next, {}, new Set(["a"]))!;
    expect(fixed.tagNumbers).toBe("fixed");
    expectSame(fixed.built, full);
    const renumbered = rebuildRevision(state, next, {}, new Set(["a"]), { tagFixups: 0 })!;
    expect(renumbered.tagNumbers).toBe("renumbered");
    expectSame(renumbered.built, full);
    // A change that moves no tag copies the kept tags as they are.
    const later = [next[0]!, { ...next[1]!, prefixes: next[1]!.prefixes.slice(0, -1) }, next[2]!];
    const kept = rebuildRevision(fixed.state, later, {}, new Set(["b"]))!;
    expect(kept.tagNumbers).toBe("kept");
    expectSame(kept.built, buildRevision(later, {}));
  });

  it("names a change whose ranges alone give the alignment, and whose parsed prefixes the withdrawn count, that the walks over both whole contents give", () => {
    let fromRanges = 0;
    let steps = 0;
    fc.assert(
      fc.property(richScenario, (scenario) => {
        rebuildSteps(scenario, (inc, current, state) => {
          const next = inc.built;
          const spliced = alignSpliced(next.content, next.change!);
          const whole = alignContents(state.content, next.content);
          expect(spliced).toEqual(whole);
          // The stored change from the ranges and the build's tag map (no walk of every kept
          // prefix), byte for byte the one the walks give.
          expect(encodeChange(makeChange(state.content, next.content, spliced, next.change))).toEqual(
            encodeChange(makeChange(state.content, next.content, whole)),
          );
          steps++;
          if (tagWalkSpliced(state.content, next.content, spliced, next.change!)) fromRanges++;
          const withdrawn = withdrawnCount(state.content, next.content);
          expect(withdrawnFrom(state.content, next.content, spliced, next.change!.tables)).toBe(withdrawn);
          // The full path's guard: the whole alignment (by the words of the two builds' tables
          // too), and the tables the full build kept.
          const full = buildWithState(current, scenario.bird);
          expect(alignTables(state.tables, full.state!.tables)).toEqual(alignContents(state.content, full.built.content));
          // Built contents are aligned by their tables; read back (no tables), by their texts: the same.
          const read = (c: RevisionContent) => decodeContent(encodeContent(c));
          expect(alignContents(read(state.content), read(full.built.content))).toEqual(alignContents(state.content, full.built.content));
          expect(alignContents(read(state.content), read(next.content))).toEqual(whole);
          expect(withdrawnFrom(state.content, full.built.content, whole, full.state!.tables)).toBe(withdrawn);
          // The lookup itself (withdrawnFrom walks instead where few prefixes are left, as here).
          let looked = 0;
          for (const fam of ["v4", "v6"] as const) {
            const removed = parsePrefixTexts(Array.from(spliced[fam].removed, (i) => state.content[fam].prefixAt(i)))[fam];
            const table = next.change!.tables![fam];
            expect(uncoveredByLookup(removed, table)).toBe(uncovered(removed, table));
            looked += uncoveredByLookup(removed, table);
          }
          expect(looked).toBe(withdrawn);
        });
      }),
      { numRuns: 200 },
    );
    // Most changes' tags are told by the ranges alone (the rest are walked).
    expect(fromRanges).toBeGreaterThan(steps / 2);
  }, 120_000);

  it("rebuilds a block of the changed prefix, not all that another module's covering prefix holds", () => {
    const slash24s = Array.from({ length: 4096 }, (_, k) => `11.${k >> 8}.${k & 255}.0/24`);
    const input: ModuleInput[] = [
      { module_id: "a", name: "asn", community: "65000:1", prefixes: ["11.0.0.0/8", "2a00::/16"] },
      { module_id: "b", name: "cdn", community: "65000:2", prefixes: slash24s.filter((_, k) => k % 2 === 0) },
    ];
    const state = buildWithState(input, {}).state!;
    // One /24 out, another in, in two /20 blocks.
    const next = [input[0]!, { ...input[1]!, prefixes: [...input[1]!.prefixes.slice(1), "11.7.1.0/24"] }];
    const inc = rebuildRevision(state, next, {}, new Set(["b"]))!;
    expectSame(inc.built, buildRevision(next, {}));
    // Two /20 blocks, each with the 8 /24s of the module it holds; not the 2,048 under the /8.
    // (11.7.1.0/24 joins 11.7.0.0/24 as a /23.)
    expect(inc.blocks).toEqual({ v4: 2, v6: 0 });
    expect(inc.built.change!.v4.map((c) => [c.to - c.from, c.count])).toEqual([
      [8, 7],
      [8, 8],
    ]);
  });

  it("gives byte for byte the revision a full build gives, over random module sets and random edits of one or two modules in a row", () => {
    fc.assert(
      fc.property(scenario, fc.infiniteStream(prefixes), ([input, settings, steps], more) => {
        let current = input;
        let state: BuildState = buildWithState(current, settings).state!;
        for (const step of steps) {
          const changed = new Set<string>();
          current = current.map((m, i) => {
            if (!step.which.includes(i)) return m;
            changed.add(m.module_id);
            const add = more.next().value as string[];
            const kept = m.prefixes.filter((_, k) => (step.seed >> k) & 1);
            return { ...m, prefixes: [...kept, ...add] };
          });
          const inc = rebuildRevision(state, current, settings, changed, { blockBits: BLOCKS });
          expect(inc).not.toBeNull();
          expectSame(inc!.built, buildRevision(current, settings));
          state = inc!.state;
        }
      }),
      { numRuns: 200 },
    );
  }, 120_000);

  it("gives the full build's revision with the default blocks too", () => {
    fc.assert(
      fc.property(scenario, ([input, settings]) => {
        const state = buildWithState(input, settings).state!;
        const next = input.map((m, i) => (i === 0 ? { ...m, prefixes: [...m.prefixes.slice(1), "11.0.3.0/24", "2a00::/120"] } : m));
        const inc = rebuildRevision(state, next, settings, new Set([input[0]!.module_id]));
        expectSame(inc!.built, buildRevision(next, settings));
      }),
      { numRuns: 100 },
    );
  }, 60_000);

  it("declines, for a full build, when the modules, their communities or the bogon settings differ from the last build's", () => {
    const input: ModuleInput[] = [
      { module_id: "a", name: "a", community: "65000:1", prefixes: ["11.0.0.0/24"] },
      { module_id: "b", name: "b", community: null, prefixes: ["11.0.1.0/24"] },
    ];
    const state = buildWithState(input, {}).state!;
    expect(rebuildRevision(state, input.slice(1), {}, new Set())).toBeNull();
    expect(rebuildRevision(state, [{ ...input[0]!, community: "65000:2" }, input[1]!], {}, new Set(["a"]))).toBeNull();
    expect(rebuildRevision(state, input, { min_prefix_length_v4: 12 }, new Set(["a"]))).toBeNull();
    expect(rebuildRevision(state, input, {}, new Set(["a"]))).not.toBeNull();
  });
});
