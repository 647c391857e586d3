import { spawnSync } from "node:child_process";
import { parseProtocolsAll } from "@rlc/shared/bird";
import { describe, expect, it } from "vitest";
import { tool } from "../../../../test/helpers/tools.js";
import { birdFixture } from "../bird-fixtures.test-helper.js";
import { AgentMetrics } from "./metrics.js";
import { startMetricsServer } from "./metrics-server.js";

const captured = birdFixture("established.txt");

function busyMetrics(): AgentMetrics {
  const now = new Date("2026-11-22T05:00:00Z");
  const m = new AgentMetrics({ version: "0.0.0", speakerId: "0192f3a4-0000-7000-8000-0000000000aa", now: () => now.getTime() });
  const parsed = parseProtocolsAll(captured, { now, timeZone: "utc" });
  m.setBird(true, parsed.protocols, parsed.sessions, captured);
  m.recordApplied({ revision_id: 4, sequence: 9, applied_at: "2026-11-22T10:00:00.000Z" });
  m.recordFailure("bad_signature");
  m.recordFailure("bird_config_invalid");
  m.recordFailure("bad_signature");
  m.recordFallback("fetch_bundle");
  m.recordReport(true);
  return m;
}

const promtool = tool("promtool");

describe("AgentMetrics", () => {
  it("render - reloads, failures by code, last applied, BIRD's protocols and sessions as bird_exporter names them", () => {
    const text = busyMetrics().render();
    expect(text).toContain("rl_agent_reloads_total 1\n");
    expect(text).toContain('rl_agent_reload_failures_total{code="bad_signature"} 2\n');
    expect(text).toContain('rl_agent_reload_failures_total{code="bird_config_invalid"} 1\n');
    expect(text).toContain("rl_agent_last_applied_revision 4\n");
    expect(text).toContain("rl_agent_last_applied_sequence 9\n");
    expect(text).toContain("rl_agent_last_applied_timestamp_seconds 1795341600\n");
    expect(text).toContain('bird_protocol_up{name="device1",proto="Device",ip_version="",import_filter="",export_filter="",state=""} 1\n');
    expect(text).toMatch(/rl_agent_bgp_routes_exported\{name="rl_peer_0192f3a40000700080000000000000a1",peer_id="0192f3a4-0000-7000-8000-0000000000a1"\} 4\n/);
    expect(text).toMatch(
      /rl_agent_bgp_session_established\{name="rl_peer_0192f3a40000700080000000000000a1",peer_id="0192f3a4-0000-7000-8000-0000000000a1",neighbor_address="127\.0\.0\.2"\} 1/,
    );
    expect(text).toMatch(/rl_agent_bgp_session_state\{name="rl_peer_0192f3a40000700080000000000000a2",.*bgp_state="Active"\} 1/);
  });

  it("render - BIRD's protocols with bird_exporter's labels and route counts, one series per channel", () => {
    const text = busyMetrics().render();
    const a1 = 'name="rl_peer_0192f3a40000700080000000000000a1",proto="BGP"';
    expect(text).toContain(`bird_protocol_up{${a1},ip_version="4",import_filter="REJECT",export_filter="ACCEPT",state="Established"} 1\n`);
    expect(text).toContain(`bird_protocol_up{${a1},ip_version="6",import_filter="REJECT",export_filter="ACCEPT",state="Established"} 1\n`);
    expect(text).toContain(`bird_protocol_prefix_export_count{${a1},ip_version="4",import_filter="REJECT",export_filter="ACCEPT"} 3\n`);
    expect(text).toContain(`bird_protocol_prefix_export_count{${a1},ip_version="6",import_filter="REJECT",export_filter="ACCEPT"} 1\n`);
    // Up since 04:15:35, scraped at 05:00:00.
    expect(text).toContain(`bird_protocol_uptime{${a1},ip_version="4",import_filter="REJECT",export_filter="ACCEPT"} 2665\n`);
    const a2 =
      'name="rl_peer_0192f3a40000700080000000000000a2",proto="BGP",ip_version="4",import_filter="REJECT",export_filter="rl_export_0192f3a40000700080000000000000a2"';
    expect(text).toContain(`bird_protocol_up{${a2},state="Active"} 0\n`);
    expect(text).toContain(`bird_protocol_uptime{${a2}} 0\n`);
    expect(text).toContain(
      'bird_protocol_prefix_import_count{name="rl_static4_e3b0c44298fc",proto="Static",ip_version="4",import_filter="ACCEPT",export_filter="REJECT"} 1\n',
    );
    expect(text).toContain(
      'bird_protocol_prefix_preferred_count{name="rl_static4_e3b0c44298fc",proto="Static",ip_version="4",import_filter="ACCEPT",export_filter="REJECT"} 1\n',
    );
  });

  it("render - escapes label values", () => {
    const m = new AgentMetrics({ version: 'a"b\\c\nd', speakerId: null });
    expect(m.render()).toContain('rl_agent_info{version="a\\"b\\\\c\\nd",speaker_id=""} 1\n');
  });

  it.skipIf(!promtool.available)("render - passes promtool check metrics, idle and busy, but for bird_exporter's _count names", () => {
    // bird_exporter's names are kept for its dashboards; promtool's only complaint may be their suffix.
    const birdExporterCount =
      /^bird_protocol_prefix_(import|export|filter|preferred)_count non-histogram and non-summary metrics should not have "_count" suffix$/;
    for (const [name, m] of [
      ["idle", new AgentMetrics({ version: "0.0.0", speakerId: null })],
      ["busy", busyMetrics()],
    ] as const) {
      const r = spawnSync("promtool", ["check", "metrics"], { input: m.render(), encoding: "utf8" });
      const problems = `${r.stdout}${r.stderr}`.split("\n").filter((l) => l.trim() && !birdExporterCount.test(l.trim()));
      expect(problems, name).toEqual([]);
      // 3: lint findings only (a format error is 1).
      expect([0, 3], name).toContain(r.status);
    }
  });

  it("metrics server - /metrics in text format 0.0.4, /healthz 200 while BIRD answers and 503 when it does not", async () => {
    const m = busyMetrics();
    const server = await startMetricsServer(m, { host: "127.0.0.1", port: 0 });
    try {
      const base = `http://127.0.0.1:${server.address.port}`;
      const metrics = await fetch(`${base}/metrics`);
      expect(metrics.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
      expect(await metrics.text()).toBe(m.render());
      expect(await (await fetch(`${base}/healthz`)).json()).toMatchObject({ status: "ok", bird_reachable: true, last_applied_revision_id: 4 });
      m.setBird(false);
      const down = await fetch(`${base}/healthz`);
      expect(down.status).toBe(503);
      expect((await fetch(`${base}/other`)).status).toBe(404);
      expect((await fetch(`${base}/metrics`, { method: "POST" })).status).toBe(405);
    } finally {
      await server.close();
    }
  });
});
