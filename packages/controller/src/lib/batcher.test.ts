import { setImmediate as nextTurn } from "node:timers/promises";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBatcher } from "./batcher.js";

type Item = { id: number; key: string; bad: boolean };

/** A batcher over items whose run doubles each id, fails a batch holding a bad item, and records every batch. */
function recorded(max: number, runTurns: number, stalledMs?: number) {
  const batches: Item[][] = [];
  const inFlight = new Set<string>();
  let overlapped = false;
  const batcher = createBatcher<Item, number>({
    max,
    ...(stalledMs === undefined ? {} : { stalledMs }),
    keyOf: (item) => item.key,
    async run(items) {
      if (items.some((item) => inFlight.has(item.key))) overlapped = true;
      for (const item of items) inFlight.add(item.key);
      batches.push(items);
      for (let i = 0; i < runTurns; i++) await nextTurn();
      for (const item of items) inFlight.delete(item.key);
      if (items.some((item) => item.bad)) throw new Error(`bad item in ${items.map((item) => item.id).join(",")}`);
      return items.map((item) => item.id * 2);
    },
  });
  return { batcher, batches, overlapped: () => overlapped };
}

describe("createBatcher", () => {
  it("each caller gets its own item's answer; a key's items never run at once and run in order; at most `max` items a batch; a bad item fails only itself", async () => {
    const item = fc.record({ key: fc.constantFrom("a", "b", "c", "d", "e"), bad: fc.integer({ min: 0, max: 9 }).map((n) => n < 2) });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ items: fc.array(item, { maxLength: 8 }), gap: fc.nat(3) }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat(3),
        // 0: every batch counts as stalled at once, so batches run side by side (up to the cap).
        fc.constantFrom(0, 1000),
        async (turns, max, runTurns, stalledMs) => {
          const { batcher, batches, overlapped } = recorded(max, runTurns, stalledMs);
          const calls: { item: Item; outcome: Promise<{ ok: true; value: number } | { ok: false }> }[] = [];
          let id = 0;
          for (const turn of turns) {
            for (const x of turn.items) {
              const it = { id: id++, ...x };
              calls.push({
                item: it,
                outcome: batcher.add(it).then(
                  (value) => ({ ok: true as const, value }),
                  () => ({ ok: false as const }),
                ),
              });
            }
            for (let i = 0; i < turn.gap; i++) await nextTurn();
          }
          const outcomes = await Promise.all(calls.map((c) => c.outcome));
          // The brute-force model: an item's answer is its own id doubled, or a failure when it is bad.
          for (const [i, o] of outcomes.entries()) expect(o).toEqual(calls[i]!.item.bad ? { ok: false } : { ok: true, value: calls[i]!.item.id * 2 });
          expect(overlapped()).toBe(false);
          for (const b of batches) {
            expect(b.length).toBeLessThanOrEqual(max);
            expect(new Set(b.map((x) => x.key)).size).toBe(b.length);
          }
          // A key's items, in the order of the batches that answered them (a failed batch's good items run again alone, in order).
          const answered = batches.filter((b) => !b.some((x) => x.bad) || (b.length === 1 && b[0]!.bad));
          for (const key of ["a", "b", "c", "d", "e"]) {
            const ran = answered.flat().filter((x) => x.key === key);
            const ids = ran.map((x) => x.id);
            expect(ids).toEqual([...ids].sort((p, q) => p - q));
          }
        },
      ),
      { numRuns: 200 },
    );
  });

  it("an item runs at once when no batch is in flight; those that come while one is go together in the next", async () => {
    const { batcher, batches } = recorded(500, 2);
    const first = batcher.add({ id: 0, key: "a", bad: false });
    expect(batches.map((b) => b.map((x) => x.id))).toEqual([[0]]); // sent at once, in the caller's turn
    const meanwhile = ["b", "c", "a"].map((key, i) => batcher.add({ id: i + 1, key, bad: false }));
    expect(await Promise.all([first, ...meanwhile])).toEqual([0, 2, 4, 6]);
    expect(batches.map((b) => b.map((x) => x.id))).toEqual([[0], [1, 2, 3]]);
  });

  it("a batch that stalls holds the others back only for `stalledMs`; an item of its key waits for it", async () => {
    let release: (() => void) | null = null;
    const batches: string[][] = [];
    const batcher = createBatcher<string, string>({
      keyOf: (item) => item.slice(0, 1),
      stalledMs: 50,
      run(items) {
        batches.push(items);
        if (items.includes("a1")) return new Promise((resolve) => (release = () => resolve(items)));
        return Promise.resolve(items);
      },
    });
    const stuck = batcher.add("a1");
    const others = [batcher.add("b1"), batcher.add("c1")];
    const sameKey = batcher.add("a2");
    const started = Date.now();
    expect(await Promise.all(others)).toEqual(["b1", "c1"]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    expect(batches).toEqual([["a1"], ["b1", "c1"]]);
    release!();
    expect(await Promise.all([stuck, sameKey])).toEqual(["a1", "a2"]);
    expect(batches).toEqual([["a1"], ["b1", "c1"], ["a2"]]);
  });

  it("a run that throws instead of rejecting fails its callers and the batcher goes on", async () => {
    let calls = 0;
    const batcher = createBatcher<number, number>({
      run: (items) => {
        if (calls++ === 0) throw new Error("no");
        return Promise.resolve(items);
      },
    });
    await expect(batcher.add(1)).rejects.toThrow("no");
    expect(await batcher.add(2)).toBe(2);
  });
});
