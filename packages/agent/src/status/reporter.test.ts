import type { StatusReport } from "@rlc/proto";
import { BirdError } from "@rlc/shared/bird";
import { createSystemClock } from "@rlc/shared/time";
import { describe, expect, it } from "vitest";
import { fakeBird, reply } from "../../../../test/helpers/agent-fakes.js";
import { birdFixture } from "../bird-fixtures.test-helper.js";
import { AgentMetrics } from "../http/metrics.js";
import { silentLogger } from "../log.js";
import { StatusReporter } from "./reporter.js";

const fixture = (name: string) => birdFixture(name);
const applied = { revision_id: 4, sequence: 9, digest: "sha256:ab", applied_at: "2026-11-22T04:15:30.000Z" };

function reporter(protocols: () => string, options: { fail?: () => boolean } = {}) {
  const bird = fakeBird(null);
  const sent: StatusReport[] = [];
  const original = bird.command.bind(bird);
  bird.command = async (c, o) => (c === "show protocols all" ? reply(0, protocols()) : original(c, o));
  const metrics = new AgentMetrics({ version: "test", speakerId: "s1" });
  const r = new StatusReporter({
    bird,
    send: async (report) => {
      if (options.fail?.()) throw new Error("controller unreachable");
      sent.push(report);
    },
    readApplied: async () => applied,
    speakerId: "s1",
    agentVersion: "test",
    clock: createSystemClock(),
    log: silentLogger,
    metrics,
    timeZone: "utc",
  });
  return { r, sent, bird, metrics };
}

describe("StatusReporter", () => {
  it("report - what BIRD runs, its sessions, the poll answered and the last error", async () => {
    const { r, sent } = reporter(() => fixture("established.txt"));
    r.setError({ code: "bad_signature", message: "signature does not verify", revision_id: 5, sequence: null, at: "2026-11-22T05:00:00.000Z" });
    expect(await r.report("live_poll", { pollId: "poll-1" })).toBe(true);
    expect(sent[0]).toMatchObject({
      speaker_id: "s1",
      reason: "live_poll",
      poll_id: "poll-1",
      applied_revision_id: 4,
      applied_sequence: 9,
      applied_digest: "sha256:ab",
      error: { code: "bad_signature", revision_id: 5 },
      bird: { reachable: true, version: "2.0.12", router_id: "127.0.0.1", last_reconfiguration: "2026-11-22T04:15:30.682Z" },
      agent_version: "test",
    });
    expect(sent[0]?.sessions.map((s) => [s.peer_id, s.bgp_state])).toEqual([
      ["0192f3a4-0000-7000-8000-0000000000a1", "Established"],
      ["0192f3a4-0000-7000-8000-0000000000a2", "Active"],
      ["0192f3a4-0000-7000-8000-0000000000a3", "Active"],
    ]);
  });

  it("checkSessions - reports when a session changes state, not when only route counts move", async () => {
    let text = fixture("established.txt");
    const { r, sent } = reporter(() => text);
    await r.checkSessions();
    await r.checkSessions();
    text = text.replace("4 exported", "5 exported");
    await r.checkSessions();
    expect(sent.map((s) => s.reason)).toEqual(["sessions_changed"]);
    text = fixture("peer-lost.txt");
    await r.checkSessions();
    expect(sent.map((s) => s.reason)).toEqual(["sessions_changed", "sessions_changed"]);
    expect(sent[1]?.sessions[0]).toMatchObject({ bgp_state: "Active", last_error: "Received: Peer de-configured" });
  });

  it("checkSessions - a report that could not be delivered goes out again on the next check", async () => {
    let down = true;
    const { r, sent, metrics } = reporter(() => fixture("established.txt"), { fail: () => down });
    expect(await r.checkSessions()).toBe(false);
    down = false;
    expect(await r.checkSessions()).toBe(true);
    expect(sent).toHaveLength(1);
    expect(metrics.render()).toMatch(/rl_agent_status_reports_total\{result="failed"\} 1\nrl_agent_status_reports_total\{result="ok"\} 1/);
  });

  it("checkSessions - an apply_failed report the controller missed goes out again as apply_failed, not as a session change", async () => {
    let down = true;
    const { r, sent } = reporter(() => fixture("established.txt"), { fail: () => down });
    r.setError({
      code: "reverted",
      message: "probation failed",
      revision_id: 5,
      sequence: 6,
      at: "2026-11-22T05:00:00.000Z",
      check: "controller_reachable",
      sessions: [],
    });
    expect(await r.report("apply_failed")).toBe(false);
    down = false;
    expect(await r.checkSessions()).toBe(true);
    expect(sent.map((s) => [s.reason, s.error?.code, s.error?.check])).toEqual([["apply_failed", "reverted", "controller_reachable"]]);
    await r.checkSessions();
    expect(sent).toHaveLength(1);
  });

  it("snapshot - a BIRD that does not answer is reachable: false with no sessions", async () => {
    const { r, bird, metrics } = reporter(() => "");
    bird.answer("show status", new BirdError("bird_unavailable", "connect ENOENT"));
    expect(await r.snapshot()).toEqual({
      bird: { reachable: false, version: null, router_id: null, server_time: null, last_reconfiguration: null },
      protocols: [],
      sessions: [],
    });
    expect(metrics.render()).toContain("rl_agent_bird_up 0\n");
    expect(metrics.health().ok).toBe(false);
  });
});
