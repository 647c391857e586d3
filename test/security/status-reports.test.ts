import { eventSubjects } from "@rlc/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// A node key's status report is bounded and strict: the known fields, about 64 KiB, a few a
// second. Reports are kept per speaker and relayed to every replica and the tenant's event
// history, so what one router key can send is what every tenant's NATS store pays for.
let t: TestController;
let speakerId: string;
let nodeKey: string;

const report = (body: Record<string, unknown>) =>
  t.call(nodeKey, { method: "POST", url: `/v1/speakers/${speakerId}/status`, payload: { speaker_id: speakerId, reason: "sessions_changed", ...body } });

describe("status reports", () => {
  beforeAll(async () => {
    t = await startTestController();
    const created = await t.call(t.rootKey, {
      method: "POST",
      url: "/v1/speakers",
      payload: { name: "edge-r", mode: "remote", router_id: "192.0.2.30", asn: 65010 },
    });
    expect(created.statusCode, created.body).toBe(201);
    const enrolled = await t.call(created.json().enrollment_token, {
      method: "POST",
      url: "/v1/nodes/enroll",
      payload: { hostname: "r.example", agent_version: "1.0.0" },
    });
    expect(enrolled.statusCode, enrolled.body).toBe(201);
    speakerId = enrolled.json().speaker_id;
    nodeKey = enrolled.json().api_key;
  });
  afterAll(async () => t?.close());

  it("an unknown key is refused with the field named, at the top, in bird, in a session and in the error", async () => {
    for (const [body, path] of [
      [{ padding: "x".repeat(1000) }, "padding"],
      [{ bird: { reachable: true, extra: 1 } }, "extra"],
      [{ sessions: [{ protocol: "rl_a", state: "up", blob: "x" }] }, "blob"],
      [{ error: { code: "c", message: "m", extra: true } }, "extra"],
    ] as const) {
      const r = await report(body);
      expect(r.statusCode, r.body).toBe(400);
      expect(r.headers["content-type"]).toMatch(/application\/problem\+json/);
      expect(r.body).toContain(path);
    }
  });

  it("a report over 64 KiB is refused; one a router of a few hundred sessions sends is taken", async () => {
    const session = (i: number) => ({
      protocol: `rl_peer_${i}`,
      peer_id: null,
      neighbor_address: `192.0.2.${i % 250}`,
      remote_asn: 65000 + i,
      state: "up",
      bgp_state: "Established",
      since: "2026-11-27 03:36:22",
      routes_imported: 0,
      routes_exported: 1000,
      last_error: null,
    });
    const big = await report({ sessions: Array.from({ length: 400 }, (_, i) => session(i)), bird: { reachable: true, version: "x".repeat(100) } });
    expect([400, 413]).toContain(big.statusCode);
    expect(big.body).toMatch(/65536|bytes|large/i);
    const ok = await report({ sessions: Array.from({ length: 150 }, (_, i) => session(i)) });
    expect(ok.statusCode, ok.body).toBe(204);
  });

  it("one speaker's reports are rate-limited: a flood gets 429 with Retry-After, and what was taken carries only known fields into its event", async () => {
    const events: unknown[] = [];
    const unsubscribe = t.controller.deps.bus.subscribe(eventSubjects.status("*", speakerId), (m) => void events.push(m));
    try {
      const answers = await Promise.all(Array.from({ length: 40 }, () => report({ bird: { reachable: true, version: "2.17.6" } })));
      const codes = answers.map((a) => a.statusCode);
      expect(codes.filter((c) => c === 204).length).toBeGreaterThan(0);
      const refused = answers.find((a) => a.statusCode === 429);
      expect(refused, `codes: ${codes.join(",")}`).toBeDefined();
      expect(refused!.headers["retry-after"]).toBe("1");
      expect(refused!.json()).toMatchObject({ code: "rate_limited", status: 429 });
    } finally {
      unsubscribe();
    }
    expect(events.length).toBeGreaterThan(0);
    for (const e of events) {
      expect(Object.keys(e as object).sort()).toEqual(["bird", "reason", "received_at", "speaker_id", "tenant_id"]);
    }
  });
});
