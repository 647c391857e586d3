import { describe, expect, it } from "vitest";
import { syncStatusOf } from "./speakers.js";

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
