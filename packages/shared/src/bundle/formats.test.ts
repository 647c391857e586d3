import { describe, expect, it } from "vitest";
import { announcementHeaders, announcementOf, bundleFormatFor, CURRENT_ANNOUNCEMENT, hasCapability, isOldAgent } from "./formats.js";

describe("bundle format negotiation", () => {
  it("serves rl-bundle/1, without any feature, to an agent that announced nothing", () => {
    const none = announcementOf(undefined, undefined);
    expect(none).toBeNull();
    expect(bundleFormatFor(none)).toBe("rl-bundle/1");
    expect(hasCapability(none, "force_confirm")).toBe(false);
    expect(isOldAgent(none)).toBe(true);
  });

  it("serves the newest format both sides know", () => {
    expect(bundleFormatFor(CURRENT_ANNOUNCEMENT)).toBe("rl-bundle/2");
    expect(bundleFormatFor(announcementOf("rl-bundle/1, rl-bundle/3", ""))).toBe("rl-bundle/1");
    // A controller set to write rl-bundle/1 only (the release before) serves it to every agent.
    expect(bundleFormatFor(CURRENT_ANNOUNCEMENT, ["rl-bundle/1"])).toBe("rl-bundle/1");
    expect(bundleFormatFor(announcementOf(["rl-bundle/3"], []))).toBeNull();
  });

  it("reads what the HTTP headers carry as what the proto fields carry", () => {
    const headers = announcementHeaders(CURRENT_ANNOUNCEMENT);
    const fromHeaders = announcementOf(headers["rl-bundle-formats"], headers["rl-agent-capabilities"]);
    expect(fromHeaders).toEqual(announcementOf(CURRENT_ANNOUNCEMENT.bundle_formats, CURRENT_ANNOUNCEMENT.capabilities));
    expect(fromHeaders).toEqual(CURRENT_ANNOUNCEMENT);
    expect(isOldAgent(fromHeaders)).toBe(false);
  });

  it("keeps at most 16 plain tokens of what an agent sends", () => {
    const a = announcementOf(`RL-Bundle/2, ${"x".repeat(100)}, bad token, ${Array.from({ length: 30 }, (_, i) => `f${i}`).join(",")}`, null);
    expect(a?.bundle_formats[0]).toBe("rl-bundle/2");
    expect(a?.bundle_formats).toHaveLength(16);
    expect(a?.bundle_formats.some((f) => f.includes(" ") || f.length > 40)).toBe(false);
  });
});
