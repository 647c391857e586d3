// collectedPrefixes against the loop it replaced: every group's prefixes in group order, as a
// new array (the build's input: the groups stay as the snapshot write reads them).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { SnapshotGroup } from "../../db/snapshots.js";
import { type CollectedModule, collectedPrefixes } from "./collect.js";

const moduleOf = (groups: string[][]): CollectedModule => ({
  module_id: "m",
  groups: groups.map((prefixes, i): SnapshotGroup => ({ source: "cdn", origin: String(i), prefixes, seen_at: null })),
  sources_ok: groups.length,
  sources_failed: 0,
  sources_stale: 0,
  warnings: [],
  cdn: [],
});

describe("collectedPrefixes", () => {
  it("gives every group's prefixes in group order, duplicates included, in an array of its own", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.constantFrom("10.0.0.0/8", "192.0.2.0/24", "2001:db8::/32"), { maxLength: 6 }), { maxLength: 1500, size: "max" }),
        (groups) => {
          const c = moduleOf(groups.map((g) => [...g]));
          const model: string[] = [];
          for (const g of groups) for (const p of g) model.push(p);
          const got = collectedPrefixes(c);
          expect(got).toEqual(model);
          got.push("x");
          expect(c.groups.map((g) => g.prefixes)).toEqual(groups);
        },
      ),
      { numRuns: 30, endOnFailure: true },
    );
  });
});
