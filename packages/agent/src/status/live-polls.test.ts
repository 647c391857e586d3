import { describe, expect, it } from "vitest";
import { LivePollAnswerer } from "./live-polls.js";

/** A clock the test moves by hand; sleeps end when the time passes them. */
function manualClock() {
  let now = 0;
  const sleepers: { at: number; wake: () => void }[] = [];
  return {
    now: () => now,
    sleep: (ms: number) => new Promise<void>((wake) => sleepers.push({ at: now + ms, wake })),
    async advance(ms: number) {
      now += ms;
      for (const s of sleepers.splice(0))
        if (s.at <= now) s.wake();
        else sleepers.push(s);
      await new Promise((r) => setImmediate(r));
    },
  };
}

describe("LivePollAnswerer", () => {
  it("answers a poll id once, however many times it arrives (NATS and the Watch stream both carry it)", async () => {
    const clock = manualClock();
    const answered: string[] = [];
    const polls = new LivePollAnswerer({ report: async (id) => void answered.push(id), minIntervalMs: 1000, clock });
    expect(polls.poll("p1")).toBe(true);
    expect(polls.poll("p1")).toBe(false);
    await clock.advance(0);
    expect(answered).toEqual(["p1"]);
  });

  it("a burst of polls costs one report a second: the newest waiting poll is answered, the ones it replaced are not", async () => {
    const clock = manualClock();
    const answered: string[] = [];
    const polls = new LivePollAnswerer({ report: async (id) => void answered.push(id), minIntervalMs: 1000, clock });
    polls.poll("p1");
    await clock.advance(0);
    for (let i = 2; i <= 30; i++) polls.poll(`p${i}`);
    await clock.advance(500);
    expect(answered).toEqual(["p1"]);
    await clock.advance(500);
    expect(answered).toEqual(["p1", "p30"]);
    await clock.advance(5000);
    expect(answered).toEqual(["p1", "p30"]);
  });
});
