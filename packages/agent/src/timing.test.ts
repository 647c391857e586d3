import type { Clock } from "@rlc/shared/time";
import { describe, expect, it } from "vitest";
import { startPeriodic } from "./timing.js";

describe("timing", () => {
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
