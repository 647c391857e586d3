import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { importCycles, importGraph } from "../../scripts/import-graph.mjs";

const root = join(import.meta.dirname, "../..");

describe("the import graph of packages/*/src", () => {
  it("has no cycle: no file reaches itself through the files it imports at run time", () => {
    const graph = importGraph(root);
    expect(graph.size).toBeGreaterThan(200);
    expect(importCycles(graph)).toEqual([]);
  });

  it("has no cycle anywhere, type-only imports counted too", () => {
    // A type import is a dependency all the same: two files that name each other's types are
    // one unit split in two.
    expect(importCycles(importGraph(root, { types: true }))).toEqual([]);
  });

  it("the cycle finder finds a cycle when there is one", () => {
    const graph = new Map([
      ["a.ts", ["b.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", ["a.ts"]],
    ]);
    expect(importCycles(graph)).toEqual([["a.ts", "b.ts", "c.ts"]]);
  });
});
