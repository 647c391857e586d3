import type { BgpSessionLiveJson } from "@rlc/proto";
import { type ProtocolChannel, type ProtocolSummary, parseProtocolChannels } from "@rlc/shared/bird";

interface Sample {
  labels?: Record<string, string | null>;
  value: number;
}

interface Applied {
  revision_id: number;
  sequence: number;
  applied_at: string;
}

/**
 * What the agent counts, kept in this object (one per agent, no module state), written in the
 * Prometheus text format 0.0.4. BIRD's protocols are written as bird_exporter writes them
 * (`bird_protocol_up`, `bird_protocol_uptime`, `bird_protocol_prefix_*_count`: one series per
 * protocol channel, labelled `name`, `proto`, `ip_version`, `import_filter`, `export_filter`,
 * and `state` on `bird_protocol_up`), so bird_exporter's Grafana dashboards work unchanged.
 * Those `_count` names are bird_exporter's: `promtool check metrics` warns about the suffix
 * (it belongs to histograms), and they are kept for the dashboards' sake; the agent's own
 * figures (`rl_agent_*`) follow the naming rules.
 */
export class AgentMetrics {
  readonly #info: { version: string; speaker_id: string | null };
  #reloads = 0;
  readonly #failures = new Map<string, number>();
  readonly #fallbacks = new Map<string, number>();
  readonly #reports = new Map<string, number>();
  #applied: Applied | null = null;
  #lastSyncOk: boolean | null = null;
  #birdUp: boolean | null = null;
  #protocols: ProtocolSummary[] = [];
  #channels = new Map<string, ProtocolChannel[]>();
  readonly #now: () => number;
  #sessions: BgpSessionLiveJson[] = [];
  readonly #probations = new Map<string, number>();
  readonly #reverts = new Map<string, number>();
  #lastProbation: { result: "confirmed" | "reverted"; check: string | null; seconds: number } | null = null;
  #onProbation: { revision_id: number; since: string } | null = null;
  readonly #endpoints: { http: string | null; grpc: string | null } = { http: null, grpc: null };

  constructor(info: { version: string; speakerId: string | null; now?: () => number }) {
    this.#info = { version: info.version, speaker_id: info.speakerId };
    this.#now = info.now ?? Date.now;
  }

  /** A bundle confirmed in BIRD. */
  recordApplied(applied: Applied): void {
    this.#reloads += 1;
    this.#applied = { ...applied };
    this.#lastSyncOk = true;
  }

  /** The last applied bundle as the state directory says, at start. */
  restoreApplied(applied: Applied | null): void {
    this.#applied = applied ? { ...applied } : null;
  }

  /** A sync attempt that ended without applying: a refused bundle, a config BIRD refused, … */
  recordFailure(code: string): void {
    this.#failures.set(code, (this.#failures.get(code) ?? 0) + 1);
    this.#lastSyncOk = false;
  }

  /** A configuration BIRD runs on probation right now (null: none). */
  setProbation(probation: { revision_id: number; since: string } | null): void {
    this.#onProbation = probation ? { ...probation } : null;
  }

  /** How a probation ended, after how long; `check` is the one that failed (reverted only). */
  recordProbation(result: "confirmed" | "reverted", check: string | null, durationMs: number): void {
    this.#probations.set(result, (this.#probations.get(result) ?? 0) + 1);
    if (result === "reverted" && check) this.#reverts.set(check, (this.#reverts.get(check) ?? 0) + 1);
    this.#lastProbation = { result, check, seconds: durationMs / 1000 };
  }

  /** The controller endpoint the next call of `transport` goes to (one replica's, when several are configured). */
  setEndpoint(transport: "http" | "grpc", address: string): void {
    this.#endpoints[transport] = address;
  }

  recordFallback(operation: string): void {
    this.#fallbacks.set(operation, (this.#fallbacks.get(operation) ?? 0) + 1);
  }

  recordReport(ok: boolean): void {
    const key = ok ? "ok" : "failed";
    this.#reports.set(key, (this.#reports.get(key) ?? 0) + 1);
  }

  /**
   * What BIRD said last; `reachable: false` keeps the last protocol figures out of /metrics.
   * `text` is the `show protocols all` answer the protocols were parsed from: its channels give
   * bird_exporter's per-channel labels and route counts.
   */
  setBird(reachable: boolean, protocols: ProtocolSummary[] = [], sessions: BgpSessionLiveJson[] = [], text = ""): void {
    this.#birdUp = reachable;
    this.#protocols = reachable ? [...protocols] : [];
    this.#sessions = reachable ? [...sessions] : [];
    this.#channels = reachable ? parseProtocolChannels(text) : new Map();
  }

  health(): {
    ok: boolean;
    bird_reachable: boolean | null;
    last_sync_ok: boolean | null;
    last_applied_revision_id: number | null;
    on_probation: { revision_id: number; since: string } | null;
    last_probation: { result: "confirmed" | "reverted"; check: string | null; seconds: number } | null;
    controller_endpoints: { http: string | null; grpc: string | null };
  } {
    return {
      ok: this.#birdUp !== false,
      bird_reachable: this.#birdUp,
      last_sync_ok: this.#lastSyncOk,
      last_applied_revision_id: this.#applied?.revision_id ?? null,
      on_probation: this.#onProbation,
      last_probation: this.#lastProbation,
      controller_endpoints: { ...this.#endpoints },
    };
  }

  /** bird_exporter's protocol families: one series per channel (a protocol without one: `ip_version=""`). */
  #renderBirdProtocols(family: (name: string, type: "counter" | "gauge", help: string, samples: Sample[]) => void): void {
    const now = this.#now();
    const rows = this.#protocols.flatMap((p) => {
      const channels = this.#channels.get(p.name) ?? [];
      const list = channels.length ? channels : [{ ip_version: "", import_filter: "", export_filter: "", imported: 0, exported: 0, filtered: 0, preferred: 0 }];
      return list.map((c) => ({
        p,
        c,
        labels: { name: p.name, proto: p.proto, ip_version: c.ip_version, import_filter: c.import_filter, export_filter: c.export_filter },
      }));
    });
    // bird_exporter's `state` is BIRD's info column (the BGP state for BGP, empty for most others).
    const state = (p: ProtocolSummary) => p.info.split(/\s+/)[0] ?? "";
    family(
      "bird_protocol_up",
      "gauge",
      "Protocol is up (bird_exporter's name and labels).",
      rows.map((r) => ({ labels: { ...r.labels, state: state(r.p) }, value: r.p.state === "up" ? 1 : 0 })),
    );
    const uptime = (p: ProtocolSummary) => (p.state === "up" && p.since ? Math.max(0, Math.floor((now - Date.parse(p.since)) / 1000)) : 0);
    family(
      "bird_protocol_uptime",
      "gauge",
      "Uptime of the protocol in seconds (0 unless up).",
      rows.map((r) => ({ labels: r.labels, value: uptime(r.p) })),
    );
    const counts: [string, string, keyof ProtocolChannel][] = [
      ["bird_protocol_prefix_import_count", "Number of imported routes", "imported"],
      ["bird_protocol_prefix_export_count", "Number of exported routes", "exported"],
      ["bird_protocol_prefix_filter_count", "Number of filtered routes", "filtered"],
      ["bird_protocol_prefix_preferred_count", "Number of preferred routes", "preferred"],
    ];
    for (const [name, help, key] of counts)
      family(
        name,
        "gauge",
        `${help} (bird_exporter's name and labels).`,
        rows.map((r) => ({ labels: r.labels, value: Number(r.c[key]) })),
      );
  }

  render(): string {
    const out: string[] = [];
    const family = (name: string, type: "counter" | "gauge", help: string, samples: Sample[]) => {
      out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const s of samples) out.push(`${name}${labels(s.labels)} ${formatValue(s.value)}`);
    };
    const counts = (m: Map<string, number>, label: string): Sample[] => [...m].sort().map(([k, value]) => ({ labels: { [label]: k }, value }));
    family("rl_agent_info", "gauge", "The agent's version and speaker.", [{ labels: this.#info, value: 1 }]);
    family("rl_agent_reloads_total", "counter", "Bundles applied and confirmed in BIRD (configure timeout + confirm).", [{ value: this.#reloads }]);
    family(
      "rl_agent_reload_failures_total",
      "counter",
      "Sync attempts that applied nothing, by reason (bundle refusals, config refused by BIRD, reload errors).",
      counts(this.#failures, "code"),
    );
    family("rl_agent_transport_fallbacks_total", "counter", "Controller calls that fell back from gRPC to HTTP.", counts(this.#fallbacks, "operation"));
    family("rl_agent_status_reports_total", "counter", "Status reports sent to the controller, by result.", counts(this.#reports, "result"));
    family("rl_agent_probations_total", "counter", "Probations ended, by result (confirmed, reverted).", counts(this.#probations, "result"));
    family(
      "rl_agent_probation_reverts_total",
      "counter",
      "Configurations reverted after their probation, by the check that failed.",
      counts(this.#reverts, "check"),
    );
    if (this.#lastProbation) {
      family("rl_agent_last_probation_duration_seconds", "gauge", "From `configure timeout` to the verdict of the last probation.", [
        { value: this.#lastProbation.seconds },
      ]);
    }
    family("rl_agent_on_probation", "gauge", "1 while BIRD runs a configuration on probation (not yet confirmed).", [{ value: this.#onProbation ? 1 : 0 }]);
    const applied = this.#applied;
    if (applied) {
      family("rl_agent_last_applied_revision", "gauge", "Revision of the bundle BIRD runs.", [{ value: applied.revision_id }]);
      family("rl_agent_last_applied_sequence", "gauge", "Sequence of the bundle BIRD runs.", [{ value: applied.sequence }]);
      family("rl_agent_last_applied_timestamp_seconds", "gauge", "When the bundle BIRD runs was confirmed.", [
        { value: Date.parse(applied.applied_at) / 1000 },
      ]);
    }
    if (this.#lastSyncOk !== null) {
      family("rl_agent_last_sync_ok", "gauge", "1 when the last sync attempt applied its bundle, 0 when it failed.", [{ value: this.#lastSyncOk ? 1 : 0 }]);
    }
    if (this.#birdUp !== null)
      family("rl_agent_bird_up", "gauge", "1 when BIRD's control socket answered on the last check.", [{ value: this.#birdUp ? 1 : 0 }]);
    this.#renderBirdProtocols(family);
    const bgp = this.#sessions;
    const routes = (pick: (s: BgpSessionLiveJson) => number) => bgp.map((s) => ({ labels: { name: s.protocol, peer_id: s.peer_id }, value: pick(s) }));
    family(
      "rl_agent_bgp_routes_imported",
      "gauge",
      "Routes the BGP protocol imported (all channels).",
      routes((s) => s.routes_imported),
    );
    family(
      "rl_agent_bgp_routes_exported",
      "gauge",
      "Routes the BGP protocol exported (all channels).",
      routes((s) => s.routes_exported),
    );
    family(
      "rl_agent_bgp_session_established",
      "gauge",
      "1 when the BGP session is Established.",
      bgp.map((s) => ({
        labels: { name: s.protocol, peer_id: s.peer_id, neighbor_address: s.neighbor_address },
        value: s.bgp_state === "Established" ? 1 : 0,
      })),
    );
    family(
      "rl_agent_bgp_session_state",
      "gauge",
      "Always 1; the labels carry BIRD's protocol state and the BGP state.",
      bgp.map((s) => ({ labels: { name: s.protocol, peer_id: s.peer_id, state: s.state, bgp_state: s.bgp_state }, value: 1 })),
    );
    return `${out.join("\n")}\n`;
  }
}

function labels(values: Record<string, string | null> | undefined): string {
  if (!values) return "";
  const parts = Object.entries(values).map(([k, v]) => `${k}="${escapeLabel(v ?? "")}"`);
  return parts.length > 0 ? `{${parts.join(",")}}` : "";
}

/** Label values escape backslash, double quote and newline (exposition format 0.0.4). */
function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (!Number.isFinite(value)) return value > 0 ? "+Inf" : "-Inf";
  return String(value);
}
