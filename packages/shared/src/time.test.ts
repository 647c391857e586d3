import { describe, expect, it } from "vitest";
import { backoffDelay, jittered } from "./time.js";

describe("time", () => {
  it("backoffDelay - grows from base/2 to the cap, spread by the random draw", () => {
    const o = { baseMs: 1000, maxMs: 30_000 };
    expect([0, 1, 2, 10].map((a) => backoffDelay(a, o, () => 0))).toEqual([500, 500, 500, 500]);
    expect([0, 1, 2, 10].map((a) => backoffDelay(a, o, () => 1))).toEqual([1000, 2000, 4000, 30_000]);
    expect(backoffDelay(1000, o, () => 1)).toBe(30_000);
  });

  it("jittered - stays within ± the fraction", () => {
    expect([jittered(30_000, 0.2, () => 0), jittered(30_000, 0.2, () => 1)]).toEqual([24_000, 36_000]);
  });
});
