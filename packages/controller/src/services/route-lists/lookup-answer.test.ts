import { parseAddress } from "@rlc/shared/prefix";
import { describe, expect, it } from "vitest";
import { answerLookup, type CollectedMatch } from "./lookup-answer.js";

const match = (over: Partial<CollectedMatch>): CollectedMatch => ({
  module_id: "00000000-0000-0000-0000-000000000001",
  module_name: "vpn",
  enabled: true,
  action: "announce",
  prefix: "10.1.0.0/16",
  ...over,
});

describe("answerLookup", () => {
  it("names the tenant exclusion and the too-short prefix that cut a collected address out", async () => {
    const answer = answerLookup(parseAddress("10.1.2.3"), null, [match({}), match({ prefix: "10.0.0.0/7" })], () => ({ min_prefix_length_v4: 8 }));
    expect(answer.excluded_by).toEqual([
      { kind: "tenant_exclusion", prefix: "10.0.0.0/8" },
      { kind: "min_prefix_length", prefix: "10.0.0.0/7" },
    ]);
    expect(answer.answer).toBe("not announced: excluded by BIRD.exclude_prefixes 10.0.0.0/8, 10.0.0.0/7 shorter than the minimum length");
  });

  it("reads no settings for an address no enabled module collected, and ignores disabled modules", async () => {
    const answer = answerLookup(parseAddress("192.0.2.1"), null, [match({ enabled: false, prefix: "192.0.2.0/24" })], () => {
      throw new Error("settings read");
    });
    expect(answer).toMatchObject({ announced: false, excluded_by: [], answer: "not announced: in no enabled list" });
  });

  it("lists every module that has an announced address, once, by name", async () => {
    const answer = answerLookup(
      parseAddress("11.0.0.1"),
      { prefix: "11.0.0.0/24", communities: ["65000:1", "65000:2"] },
      [
        match({ module_name: "b", prefix: "11.0.0.0/24" }),
        match({ module_name: "a", prefix: "11.0.0.0/24" }),
        match({ module_name: "a", prefix: "11.0.0.0/16" }),
      ],
      () => ({}),
    );
    expect(answer.answer).toBe("announced as 11.0.0.0/24 with 65000:1, 65000:2 — from modules a, b");
  });
});
