import type { BirdControl, BirdReply } from "@rlc/shared/bird";
import { describe, expect, it } from "vitest";
import { birdFixture } from "../bird-fixtures.test-helper.js";
import { createLogger } from "../log.js";
import { type BirdBaseline, readBaseline } from "./baseline.js";
import { revertAndVerify } from "./revert.js";

// revertAndVerify on the `show status` replies real BIRDs gave around `configure timeout` and
// the revert (status/fixtures/undo-*.txt and timer-*.txt: before, on probation, after).

const VERSIONS = ["2.0.12", "2.17.6", "3.1.8"];
const replies = (name: string) => birdFixture(name).split("=====\n");
const reply = (code: number, text = ""): BirdReply => ({ code, text, lines: [] });

/** A BIRD that answers `show status` with the probation's reply until the revert (or its timer, at `timerAt` on `clock`), then the one after. */
function birdAround(name: string, timer?: { clock: { now(): number }; at: number }) {
  const [before, onProbation, after] = replies(name) as [string, string, string];
  const state = { reverted: false, commands: [] as string[] };
  const bird: BirdControl = {
    command: async (command) => {
      state.commands.push(command);
      if (command === "show protocols all") return reply(0);
      if (timer && timer.clock.now() >= timer.at) state.reverted = true;
      return reply(13, state.reverted ? after : onProbation);
    },
    close: () => undefined,
  };
  return { bird, before, state };
}

function fakeClock() {
  let now = 1_000_000;
  return { now: () => now, sleep: async (ms: number) => void (now += ms) };
}

const log = createLogger("silent");

async function baselineOf(before: string): Promise<BirdBaseline> {
  const bird: BirdControl = { command: async (c) => reply(13, c === "show status" ? before : ""), close: () => undefined };
  return readBaseline({ bird, clock: fakeClock(), timeZone: "utc" });
}

describe("revertAndVerify on each BIRD version's captured show status", () => {
  it.each(VERSIONS)("BIRD %s: configure undo is seen as the previous configuration running again, at once", async (version) => {
    const { bird, before, state } = birdAround(`undo-${version}.txt`);
    const baseline = await baselineOf(before);
    expect(baseline.version).toBe(version);
    const clock = fakeClock();
    const start = clock.now();
    const undo = async () => {
      state.reverted = true;
      return reply(4, "Reconfiguration in progress");
    };
    const result = await revertAndVerify({ bird, clock, log, timeZone: "utc" }, undo, baseline, clock.now() + 30_000);
    expect(result).toEqual({ how: "undo", verified: true });
    expect(clock.now() - start).toBeLessThan(1000);
  });

  it.each(VERSIONS)("BIRD %s: a refused undo waits for BIRD's timer and then sees the previous configuration", async (version) => {
    const clock = fakeClock();
    const timerEndsAt = clock.now() + 2000;
    const { bird, before } = birdAround(`timer-${version}.txt`, { clock, at: timerEndsAt });
    const baseline = await baselineOf(before);
    const undo = async (): Promise<BirdReply> => {
      throw new Error("8002 refused");
    };
    const result = await revertAndVerify({ bird, clock, log, timeZone: "utc" }, undo, baseline, timerEndsAt);
    expect(result).toEqual({ how: "timer", verified: true });
    expect(clock.now() - timerEndsAt).toBeLessThan(1000);
  });

  it("BIRD 3.1.8: `Nothing to do` to the undo means its timer already reverted", async () => {
    const { bird, before, state } = birdAround("timer-3.1.8.txt");
    state.reverted = true;
    const baseline = await baselineOf(before);
    const result = await revertAndVerify({ bird, clock: fakeClock(), log, timeZone: "utc" }, async () => reply(19, "Nothing to do"), baseline, 0);
    expect(result).toEqual({ how: "timer", verified: true });
  });

  it("a BIRD still running the configuration on probation is not taken as reverted (2.0.12 and 3.1.8)", async () => {
    for (const version of ["2.0.12", "3.1.8"]) {
      const { bird, before } = birdAround(`undo-${version}.txt`);
      const baseline = await baselineOf(before);
      const clock = fakeClock();
      const result = await revertAndVerify({ bird, clock, log, timeZone: "utc" }, async () => reply(4), baseline, 0, 2000);
      expect(result, version).toEqual({ how: "undo", verified: false });
    }
  });
});
