import type { BgpSessionLiveJson, BirdInfoJson, ReportReasonJson, StatusErrorJson, StatusReport } from "@rlc/proto";
import { type BirdControl, type ProtocolSummary, parseProtocolsAll, parseShowStatus } from "@rlc/shared/bird";
import type { Clock } from "@rlc/shared/time";
import type { AgentMetrics } from "../http/metrics.js";
import { errorFields, type Logger } from "../log.js";
import type { AppliedRecord } from "../state.js";

/** What BIRD says right now. */
export interface BirdSnapshot {
  bird: BirdInfoJson;
  protocols: ProtocolSummary[];
  sessions: BgpSessionLiveJson[];
}

export interface ReporterOptions {
  bird: BirdControl;
  send(report: StatusReport): Promise<void>;
  readApplied(): Promise<AppliedRecord | null>;
  speakerId: string;
  agentVersion: string;
  clock: Clock;
  log: Logger;
  metrics: AgentMetrics;
  /** The zone BIRD prints times in; the agent runs beside BIRD, so `local`. */
  timeZone?: "local" | "utc";
}

const UNREACHABLE: BirdInfoJson = { reachable: false, version: null, router_id: null, server_time: null, last_reconfiguration: null };

/**
 * Builds status reports from BIRD (`show status`, `show protocols all`) and the state directory,
 * and sends them: after each apply attempt (the sync loop calls {@link report}), on every live
 * poll, and when a session changes ({@link checkSessions}, run periodically). Reports go out
 * one at a time, in order. A report that could not be sent is sent again on the next check.
 */
export class StatusReporter {
  readonly #o: ReporterOptions;
  #lastError: StatusErrorJson | null = null;
  #lastSeen: string | null = null;
  #unsent = false;
  /** An `applied`/`apply_failed` report that did not go out: resent with its reason (the controller's apply job waits on it). */
  #unsentOutcome: "applied" | "apply_failed" | null = null;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ReporterOptions) {
    this.#o = options;
  }

  /** The failure carried by every report until an apply succeeds (null clears it). */
  setError(error: StatusErrorJson | null): void {
    this.#lastError = error;
  }

  /** Never throws: a BIRD that does not answer is `reachable: false` with no sessions. */
  async snapshot(): Promise<BirdSnapshot> {
    const { bird, clock, metrics } = this.#o;
    try {
      const status = await bird.command("show status");
      const protocols = await bird.command("show protocols all");
      const parsed = parseProtocolsAll(protocols.text, { now: new Date(clock.now()), timeZone: this.#o.timeZone });
      metrics.setBird(true, parsed.protocols, parsed.sessions, protocols.text);
      return { bird: parseShowStatus(status.text, { timeZone: this.#o.timeZone }), protocols: parsed.protocols, sessions: parsed.sessions };
    } catch (error) {
      this.#o.log.warn("BIRD did not answer", errorFields(error));
      metrics.setBird(false);
      return { bird: UNREACHABLE, protocols: [], sessions: [] };
    }
  }

  /** Sends a report now; false when neither gRPC nor HTTP took it. */
  report(reason: ReportReasonJson, options: { pollId?: string; snapshot?: BirdSnapshot } = {}): Promise<boolean> {
    const run = this.#queue.then(() => this.#send(reason, options));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Reports when a session changed state (or the last report was lost); true unless sending failed. */
  async checkSessions(): Promise<boolean> {
    const snapshot = await this.snapshot();
    if (!this.#unsent && fingerprint(snapshot) === this.#lastSeen) return true;
    return this.report(this.#unsentOutcome ?? "sessions_changed", { snapshot });
  }

  async #send(reason: ReportReasonJson, options: { pollId?: string; snapshot?: BirdSnapshot }): Promise<boolean> {
    const snapshot = options.snapshot ?? (await this.snapshot());
    const applied = await this.#o.readApplied().catch(() => null);
    const report: StatusReport = {
      speaker_id: this.#o.speakerId,
      reason,
      poll_id: options.pollId ?? null,
      applied_revision_id: applied?.revision_id ?? null,
      applied_sequence: applied?.sequence ?? null,
      applied_digest: applied?.digest ?? null,
      applied_at: applied?.applied_at ?? null,
      error: this.#lastError,
      bird: snapshot.bird,
      sessions: snapshot.sessions,
      agent_version: this.#o.agentVersion,
      reported_at: new Date(this.#o.clock.now()).toISOString(),
    };
    try {
      await this.#o.send(report);
      this.#o.metrics.recordReport(true);
      this.#lastSeen = fingerprint(snapshot);
      this.#unsent = false;
      this.#unsentOutcome = null;
      return true;
    } catch (error) {
      this.#o.metrics.recordReport(false);
      this.#unsent = true;
      if (reason === "applied" || reason === "apply_failed") this.#unsentOutcome = reason;
      this.#o.log.warn("status report not delivered", { reason, ...errorFields(error) });
      return false;
    }
  }
}

/** What counts as a change: reachability and each session's states and error, not route counts. */
function fingerprint(s: BirdSnapshot): string {
  const sessions = s.sessions.map((x) => `${x.protocol}|${x.state}|${x.bgp_state}|${x.last_error}`).sort();
  return `${s.bird.reachable}\n${sessions.join("\n")}`;
}
