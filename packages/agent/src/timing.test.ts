import { describe, expect, it } from "vitest";
import { backoffDelay, type Clock, jittered, startPeriodic } from "./timing.js";

describe("timing", () => {
  it("backoffDelay - grows from base/2 to the cap, spread by the random draw", () => {
    const o = { baseMs: 1000, maxMs: 30_000 };
    expect([0, 1, 2, 10].map((a) => backoffDelay(a, o, () => 0))).toEqual([500, 500, 500, 500]);
    expect([0, 1, 2, 10].map((a) => backoffDelay(a, o, () => 1))).toEqual([1000, 2000, 4000, 30_000]);
    expect(backoffDelay(1000, o, () => 1)).toBe(30_000);
  });

  it("jittered - stays within ± the fraction", () => {
    expect([jittered(30_000, 0.2, () => 0), jittered(30_000, 0.2, () => 1)]).toEqual([24_000, 36_000]);
  });

  it("startPeriodic - waits an interval after success and backs off after failures", async () => {
    const waits: number[] = [];
    const results = [true, false, false, true];
    let done = () => {};
    const finished = new Promise<void>((r) => (done = r));
    const clock: Clock = {
      now: () => 0,
      sleep: async (ms) => {
        waits.push(ms);
        if (results.length === 0) done();
        await new Promise((r) => setImmediate(r));
      },
    };
    const periodic = startPeriodic(async () => results.shift() ?? true, { intervalMs: 100, clock, random: () => 1, firstDelayMs: 0 });
    await finished;
    await periodic.stop();
    expect(waits).toEqual([0, 120, 200, 400, 120]);
  });
});
