import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type BogonSettings, type BuiltRevision, buildRevision, type ModuleInput } from "./revision-build.js";
import { type BuildState, buildWithState, rebuildRevision } from "./revision-incremental.js";
import { encodeContent } from "./revision-store.js";

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

describe("rebuildRevision", () => {
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
