import { describe, expect, it } from "vitest";
import { mapLimit } from "./map-limit.js";

const tick = () => new Promise((r) => setTimeout(r, 1));

describe("mapLimit", () => {
  it("answers in the items' order with at most `limit` calls under way", async () => {
    let running = 0;
    let most = 0;
    const out = await mapLimit([5, 1, 4, 2, 3, 0, 6], 3, async (n) => {
      most = Math.max(most, ++running);
      for (let i = 0; i < n; i++) await tick();
      running--;
      return n * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0, 60]);
    expect(most).toBe(3);
  });

  it("starts nothing after a failure, and throws it once the calls under way have ended", async () => {
    const started: number[] = [];
    let ended = 0;
    await expect(
      mapLimit([0, 1, 2, 3, 4, 5], 2, async (n) => {
        started.push(n);
        await tick();
        if (n === 1) throw new Error("one failed");
        await tick();
        ended++;
        return n;
      }),
    ).rejects.toThrow("one failed");
    expect(started).toEqual([0, 1]);
    expect(ended).toBe(1);
  });
});
