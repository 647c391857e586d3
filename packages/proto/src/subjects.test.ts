import { describe, expect, it } from "vitest";
import { EVENTS, eventSubject } from "./events.js";
import { eventStreamName, eventSubjects, internalSubjects, monitoringInboxPrefix, parseEventSubject, tenantOfInternalSubject } from "./subjects.js";

describe("NATS subjects", () => {
  it("event subjects are versioned per tenant and parse back to what built them", () => {
    expect(eventSubjects.status("t1", "s1")).toBe("rl.v1.t1.speakers.s1.status");
    expect(parseEventSubject(eventSubjects.status("t1", "s1"))).toEqual({ kind: "status", tenantId: "t1", speakerId: "s1" });
    expect(parseEventSubject(eventSubjects.session("t1", "s1"))).toEqual({ kind: "session", tenantId: "t1", speakerId: "s1" });
    expect(parseEventSubject(eventSubjects.apply("t1", "s1"))).toEqual({ kind: "apply", tenantId: "t1", speakerId: "s1" });
    expect(parseEventSubject(eventSubjects.revisionCreated("t1", 42))).toEqual({ kind: "revision_created", tenantId: "t1", revisionId: 42 });
    expect(parseEventSubject(eventSubjects.jobFinished("t1", "j1"))).toEqual({ kind: "job_finished", tenantId: "t1", jobId: "j1" });
  });

  it("anything but a v1 event subject parses to null: wake-ups, patterns, other versions", () => {
    for (const s of [
      internalSubjects.notify("t1", "s1"),
      internalSubjects.jobsWake,
      "rl.v2.t1.jobs.j1.finished",
      "rl.v1.t1.jobs.*.finished",
      "rl.v1.t1.revisions.x.created",
      "rl.v1.t1.speakers.s1.other",
    ]) {
      expect(parseEventSubject(s), s).toBeNull();
    }
  });

  it("an id with a dot or a wildcard is refused: it would widen a subscription or a permission", () => {
    expect(() => eventSubjects.status("t1", "a.b")).toThrow(/not usable in a NATS subject/);
    expect(() => internalSubjects.notify("t1", ">")).toThrow(/not usable/);
    expect(() => eventStreamName("t.*")).toThrow(/not usable/);
    expect(() => monitoringInboxPrefix("")).toThrow(/not usable/);
    // `*` is a pattern where the builders are asked for one.
    expect(eventSubjects.status("*", "*")).toBe("rl.v1.*.speakers.*.status");
  });

  it("the tenant of an internal subject, never of an event or the job wake-up", () => {
    expect(tenantOfInternalSubject(internalSubjects.lookupChanged("t1"))).toBe("t1");
    expect(tenantOfInternalSubject(internalSubjects.jobsWake)).toBeNull();
    expect(tenantOfInternalSubject(eventSubjects.jobFinished("t1", "j1"))).toBeNull();
  });

  it("every event's subject comes from its own payload and sits under its address", () => {
    const payload = { tenant_id: "t1", job_id: "j1", type: "apply", status: "succeeded" as const, error_code: null, at: "2026-11-22T10:00:00.000Z" };
    expect(EVENTS.job_finished.schema.parse(payload)).toEqual(payload);
    expect(eventSubject("job_finished", payload)).toBe("rl.v1.t1.jobs.j1.finished");
    for (const e of Object.values(EVENTS)) {
      const tokens = e.address.split(".");
      expect(tokens.slice(0, 3)).toEqual(["rl", "v1", "{tenant_id}"]);
      for (const t of tokens.filter((x) => x.startsWith("{"))) expect(Object.keys(e.parameters)).toContain(t.slice(1, -1));
    }
  });
});
