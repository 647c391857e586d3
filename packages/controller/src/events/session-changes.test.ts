import { describe, expect, it } from "vitest";
import { sessionChanges } from "./session-changes.js";

const at = new Date("2026-11-22T10:00:00.000Z");
const s = (protocol: string, state: string, bgp_state: string | null = null, extra: Record<string, unknown> = {}) => ({ protocol, state, bgp_state, ...extra });
const report = (...sessions: ReturnType<typeof s>[]) => ({ reason: "live_poll", sessions });

describe("sessionChanges", () => {
  it("same states as the previous report: nothing, whatever else changed (routes, since)", () => {
    const before = report(s("a", "up", "Established", { routes_imported: 1 }));
    const after = report(s("a", "up", "Established", { routes_imported: 9, since: "later" }));
    expect(sessionChanges("t", "sp", before, after, at)).toEqual([]);
  });

  it("a state or BGP state change, a session that appears and one that goes away", () => {
    const before = report(s("a", "start", "Active"), s("b", "up", "Established"), s("c", "up", "Established"));
    const after = report(s("a", "up", "Established"), s("c", "up", "Idle"), s("d", "down", null, { neighbor_address: "192.0.2.1", peer_id: "p" }));
    const changes = sessionChanges("t", "sp", before, after, at);
    expect(changes.map((c) => [c.protocol, c.previous?.state ?? null, c.current?.state ?? null, c.current?.bgp_state ?? null])).toEqual([
      ["a", "start", "up", "Established"],
      ["c", "up", "up", "Idle"],
      ["d", null, "down", null],
      ["b", "up", null, null],
    ]);
    expect(changes[2]).toMatchObject({ tenant_id: "t", speaker_id: "sp", neighbor_address: "192.0.2.1", peer_id: "p", at: at.toISOString() });
  });

  it("a report without a session list tells nothing about sessions; a first report makes each appear", () => {
    expect(sessionChanges("t", "sp", report(s("a", "up")), { reason: "apply_failed" }, at)).toEqual([]);
    expect(sessionChanges("t", "sp", null, report(s("a", "up")), at)).toEqual([expect.objectContaining({ protocol: "a", previous: null })]);
  });
});
