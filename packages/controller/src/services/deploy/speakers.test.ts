import { CURRENT_ANNOUNCEMENT } from "@rlc/shared/bundle";
import { describe, expect, it } from "vitest";
import { olderRelease, speakerWarnings, syncStatusOf } from "./speakers.js";

const reported = {
  last_report_at: new Date("2026-01-01T00:00:00Z"),
  dispatch_status: "idle" as const,
  last_error: null,
  desired_revision_id: 7,
  applied_revision_id: 7,
};

describe("a speaker's sync status", () => {
  it("is unknown until its agent has reported once", () => {
    expect(syncStatusOf({ ...reported, last_report_at: null, applied_revision_id: null })).toBe("unknown");
  });

  it("is in sync when it runs the revision it should, and when it was never given one", () => {
    expect(syncStatusOf(reported)).toBe("in_sync");
    expect(syncStatusOf({ ...reported, desired_revision_id: null, applied_revision_id: null })).toBe("in_sync");
  });

  it("is out of sync while a newer revision is on its way", () => {
    expect(syncStatusOf({ ...reported, desired_revision_id: 8 })).toBe("out_of_sync");
  });

  it("is an error when the dispatch failed, or an error stands while it runs another revision", () => {
    expect(syncStatusOf({ ...reported, dispatch_status: "failed" })).toBe("error");
    expect(syncStatusOf({ ...reported, desired_revision_id: 8, last_error: { code: "bird_rejected" } })).toBe("error");
    // An error left over from an earlier revision does not taint the one it now runs.
    expect(syncStatusOf({ ...reported, last_error: { code: "bird_rejected" } })).toBe("in_sync");
  });
});

describe("what GET /v1/speakers warns of a speaker's agent", () => {
  const seen = { mode: "remote" as const, last_seen_at: new Date("2026-01-01T00:00:00Z") };
  const codes = (row: Parameters<typeof speakerWarnings>[0], controller = "1.4.0") => speakerWarnings(row, controller).map((w) => w.code);

  it("an agent that announced nothing is outdated; one announcing rl-bundle/2 is not", () => {
    expect(codes({ ...seen, agent_accepts: null, agent_version: "1.4.0" })).toEqual(["agent_outdated"]);
    expect(codes({ ...seen, agent_accepts: CURRENT_ANNOUNCEMENT, agent_version: "1.4.0" })).toEqual([]);
    expect(codes({ ...seen, agent_accepts: { bundle_formats: ["rl-bundle/1"], capabilities: [] }, agent_version: "1.4.0" })).toEqual(["agent_outdated"]);
  });

  it("an agent of an older release than the controller is older, whatever the builds between tags say", () => {
    expect(codes({ ...seen, agent_accepts: CURRENT_ANNOUNCEMENT, agent_version: "1.3.9" })).toEqual(["agent_older"]);
    expect(codes({ ...seen, agent_accepts: CURRENT_ANNOUNCEMENT, agent_version: "1.4.0-dev.3+gabc1234" })).toEqual([]);
    expect(olderRelease("0.9.12", "1.0.0")).toBe(true);
    expect(olderRelease("1.10.0", "1.9.0")).toBe(false);
    expect(olderRelease("0.0.0-dev+gabc1234", "0.0.0-dev")).toBe(false);
    expect(olderRelease(null, "1.0.0")).toBe(false);
  });

  it("says nothing of a local speaker or of one no agent has spoken for", () => {
    expect(codes({ ...seen, mode: "local", agent_accepts: null, agent_version: null })).toEqual([]);
    expect(codes({ ...seen, last_seen_at: null, agent_accepts: null, agent_version: "0.1.0" })).toEqual([]);
  });
});
