import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { BundlePayload, BundlePrefix } from "../../bundle/index.js";
import { type RenderOptions, renderBirdConfig, StaticsCache } from "./render.js";

// A render with a StaticsCache writes again only the community sets whose prefixes changed; what
// it gives must be byte for byte what a render without the cache gives, whatever came before.

const v4 = fc.nat(40).map((n) => `10.${n >> 4}.${n & 15}.0/24`);
const v6 = fc.nat(40).map((n) => `2001:db8:${n.toString(16)}::/48`);
// Several spellings of the same sets (order, repeats), large communities, no community at all.
const communities = fc.constantFrom<string[]>(
  ["65000:1"],
  ["65000:2"],
  ["65000:2", "65000:1"],
  ["65000:1", "65000:2"],
  ["65000:1", "65000:1"],
  ["65000:0:7"],
  [],
);
// Now and then a prefix BIRD would refuse: both renders must refuse it the same way.
const bad = fc.constantFrom("10.0.0.1/24", "not-a-prefix");
const entries = (net: fc.Arbitrary<string>) =>
  fc.array(fc.tuple(fc.oneof({ weight: 30, arbitrary: net }, { weight: 1, arbitrary: bad }), communities), { maxLength: 30 });
const revision = fc.record({
  v4: entries(v4),
  v6: entries(v6),
  kind: fc.constantFrom("blackhole", "unreachable"),
  titled: fc.boolean(),
});
type Revision = typeof revision extends fc.Arbitrary<infer T> ? T : never;

function payload(r: Revision): BundlePayload {
  // Decoded sections share one communities array per spelling; hand-built payloads do not.
  const shared = new Map<string, string[]>();
  const share = ([net, c]: [string, string[]]): BundlePrefix => {
    if (!shared.has(c.join())) shared.set(c.join(), c);
    return [net, shared.get(c.join()) as string[]];
  };
  return {
    tenant_id: "00000000-0000-7000-8000-000000000001",
    speaker_id: "00000000-0000-7000-8000-0000000000aa",
    revision_id: 1,
    sequence: 1,
    digest: "sha256:00",
    speaker: { router_id: "127.0.0.1", asn: 65000 },
    bird: { static_route_kind: r.kind },
    communities: r.titled ? [{ community: "65000:1", title: "blackhole" }] : [],
    peers: [],
    prefixes: { v4: r.v4.map(share), v6: r.v6.map((e, i) => (i % 2 ? share(e) : [e[0], [...e[1]]])) },
  } as BundlePayload;
}

function outcome(p: BundlePayload, options: RenderOptions, cache?: StaticsCache): unknown {
  try {
    return renderBirdConfig(p, options, cache);
  } catch (error) {
    return { refused: (error as Error).message };
  }
}

describe("renderBirdConfig with a StaticsCache", () => {
  it.each<[string, RenderOptions]>([
    ["split", { statics: "split" }],
    ["inline", {}],
  ])("gives the bytes of a render without it, revision after revision (%s)", (_name, options) => {
    fc.assert(
      fc.property(fc.array(revision, { minLength: 1, maxLength: 6 }), (revisions) => {
        const cache = new StaticsCache();
        for (const r of revisions) expect(outcome(payload(r), options, cache)).toEqual(outcome(payload(r), options));
      }),
      { numRuns: 300 },
    );
  });

  it("gives the bytes of a render without it when each revision changes a few prefixes of the last (its sets' texts patched)", () => {
    // A long list and small edits: drops (alone and in runs), adds, a re-tag, now and then a bad prefix.
    const edit = fc.record({
      at: fc.nat(400),
      drop: fc.nat(40),
      add: fc.array(fc.oneof({ weight: 40, arbitrary: fc.nat(4000).map((n) => `11.${n >> 8}.${n & 255}.0/24`) }, { weight: 1, arbitrary: bad }), {
        maxLength: 5,
      }),
      tag: communities,
    });
    fc.assert(
      fc.property(fc.array(fc.array(edit, { maxLength: 4 }), { minLength: 1, maxLength: 5 }), fc.constantFrom("blackhole", "unreachable"), (steps, kind) => {
        const cache = new StaticsCache();
        let v4: [string, string[]][] = Array.from({ length: 400 }, (_, i) => [`10.${i >> 8}.${i & 255}.0/24`, i % 3 ? ["65000:1"] : ["65000:2"]]);
        for (const edits of [[], ...steps]) {
          for (const e of edits) v4 = [...v4.slice(0, e.at), ...e.add.map((net): [string, string[]] => [net, e.tag]), ...v4.slice(e.at + e.drop)];
          const r: Revision = { v4, v6: [], kind, titled: false };
          expect(outcome(payload(r), { statics: "split" }, cache)).toEqual(outcome(payload(r), { statics: "split" }));
        }
      }),
      { numRuns: 200 },
    );
  });

  it("hands back the same text for a set whose prefixes did not change, and writes the changed one again", () => {
    const cache = new StaticsCache();
    const before: Revision = {
      v4: [
        ["10.0.0.0/24", ["65000:1"]],
        ["10.0.1.0/24", ["65000:2"]],
      ],
      v6: [],
      kind: "blackhole",
      titled: false,
    };
    const first = renderBirdConfig(payload(before), { statics: "split" }, cache).files;
    const after = renderBirdConfig(payload({ ...before, v4: [...before.v4, ["10.0.2.0/24", ["65000:2"]]] }), { statics: "split" }, cache).files;
    const changed = Object.keys(after).filter((name) => after[name] !== first[name]);
    expect(changed).toHaveLength(1);
    expect(after[changed[0] as string]).toContain("route 10.0.2.0/24 blackhole;");
    expect(Object.values(after).some((text) => text.includes("route 10.0.0.0/24 blackhole;"))).toBe(true);
  });
});
