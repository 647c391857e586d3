import { eventSubjects, parseEventSubject } from "@rlc/proto";
import type { Bus } from "../../bus/index.js";
import type { Sql } from "../../db/connect.js";
import type { SpeakerRow } from "../../db/speakers.js";
import { uuidv7 } from "../../lib/ids.js";
import type { RequestContext } from "../access/context.js";
import type { AgentNotifier } from "./agent-notifier.js";
import type { reportedSessions, SpeakerService } from "./speakers.js";

type Report = {
  poll_id?: string | null;
  applied_revision_id?: number | null;
  bird?: Record<string, unknown> | null;
  sessions?: unknown[];
  received_at?: string;
};

function liveOf(speakerId: string, report: Report | null, polledAt: string | null, stale: boolean, fallback: SpeakerRow) {
  const bird = (report?.bird ?? null) as {
    reachable?: boolean;
    version?: string;
    router_id?: string;
    server_time?: string;
    last_reconfiguration?: string;
  } | null;
  const sessions = (report?.sessions as ReturnType<typeof reportedSessions> | undefined) ?? [];
  return {
    speaker_id: speakerId,
    reachable: Boolean(report) && !stale,
    stale,
    polled_at: polledAt,
    revision_id: report?.applied_revision_id ?? fallback.applied_revision_id,
    bird: bird
      ? {
          version: bird.version ?? null,
          router_id: bird.router_id ?? null,
          server_time: bird.server_time ?? null,
          last_reconfiguration: bird.last_reconfiguration ?? null,
        }
      : null,
    sessions: sessions.map((s) => ({
      protocol: String(s.protocol),
      peer_id: (s.peer_id as string | null | undefined) || null,
      neighbor_address: (s.neighbor_address as string | null | undefined) ?? null,
      remote_asn: (s.remote_asn as number | null | undefined) ?? null,
      state: String(s.state ?? "unknown"),
      bgp_state: (s.bgp_state as string | null | undefined) ?? null,
      since: (s.since as string | null | undefined) ?? null,
      routes_imported: (s.routes_imported as number | null | undefined) ?? null,
      routes_exported: (s.routes_exported as number | null | undefined) ?? null,
      last_error: (s.last_error as string | null | undefined) || null,
    })),
  };
}

function speakerOfStatusSubject(tenantId: string, subject: string): string | null {
  const p = parseEventSubject(subject);
  return p?.kind === "status" && p.tenantId === tenantId ? p.speakerId : null;
}

type Answer = { report: Report; at: Date };

/** However many callers ask, one speaker is polled at most once in this long; later callers join that poll. */
export const LIVE_POLL_MIN_INTERVAL_MS = 2000;

/**
 * `GET /v1/speakers?live=true`: asks every listed speaker's agent for a fresh report at once
 * (over the bus, so whichever replica holds the agent's stream relays it), waits at most
 * `timeoutMs`, and marks the silent ones stale with their last report. Polls are coalesced: a
 * speaker polled less than `LIVE_POLL_MIN_INTERVAL_MS` ago (and not left unanswered) is not
 * asked again, the caller shares that poll's answer, so many viewers polling at once cost each
 * router one report.
 */
export function createLivePolls(deps: { bus: Bus; notifier: AgentNotifier; sql: Sql; speakers: Pick<SpeakerService, "list">; minIntervalMs?: number }) {
  const minIntervalMs = deps.minIntervalMs ?? LIVE_POLL_MIN_INTERVAL_MS;
  const recent = new Map<string, { startedAt: number; answer: Promise<Answer | null> }>();

  const pollOne = (s: SpeakerRow, timeoutMs: number): Promise<Answer | null> => {
    const now = Date.now();
    const joined = recent.get(s.id);
    if (joined && now - joined.startedAt < minIntervalMs) return joined.answer;
    const pollId = uuidv7();
    const answer = new Promise<Answer | null>((resolve) => {
      const unsubscribe = deps.bus.subscribe(eventSubjects.status(s.tenant_id, s.id), (message, subject) => {
        // The speaker is the one the subject names, never what the message says: only the
        // controller publishes status events, after checking the reporting node key.
        const report = message as Report;
        if (speakerOfStatusSubject(s.tenant_id, subject) !== s.id || typeof report !== "object" || report === null) return;
        if (report.poll_id !== pollId) return;
        clearTimeout(timer);
        unsubscribe();
        resolve({ report, at: new Date() });
      });
      const timer = setTimeout(() => {
        unsubscribe();
        resolve(null);
      }, timeoutMs);
      deps.notifier.notify(s.tenant_id, s.id, { type: "live_poll", poll_id: pollId }).catch(() => {});
    });
    const entry = { startedAt: now, answer };
    recent.set(s.id, entry);
    // A poll nobody answered is not shared: the next caller asks again.
    void answer.then((a) => {
      if (!a && recent.get(s.id) === entry) recent.delete(s.id);
    });
    for (const [id, r] of recent) if (now - r.startedAt >= minIntervalMs) recent.delete(id);
    return answer;
  };

  const polls = {
    async poll(speakers: SpeakerRow[], timeoutMs: number) {
      const requestedAt = new Date();
      const answers = new Map<string, Answer>();
      await Promise.all(
        speakers.map(async (s) => {
          // A joined poll may have been asked with a longer wait: this caller waits its own.
          let timer: NodeJS.Timeout | undefined;
          const own = new Promise<null>((r) => {
            timer = setTimeout(() => r(null), timeoutMs);
          });
          const answer = await Promise.race([pollOne(s, timeoutMs), own]);
          clearTimeout(timer);
          if (answer) answers.set(s.id, answer);
        }),
      );
      return liveResult(speakers, answers, requestedAt, timeoutMs);
    },

    /**
     * `GET /v1/speakers`: a page of speakers; with `live`, each speaker's agent polled (see
     * above), its answer as the speaker's `live` and every poll in `polls` beside the items.
     */
    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number; live: boolean; live_timeout_ms: number }) {
      const { page, rows } = await deps.speakers.list(ctx, q);
      if (!q.live) return page;
      const { live, polls: answered } = await polls.poll(rows, q.live_timeout_ms);
      return { ...page, items: page.items.map((s) => ({ ...s, live: live.get(s.id) })), polls: answered };
    },
  };
  return polls;
}

export type LivePolls = ReturnType<typeof createLivePolls>;

function liveResult(speakers: SpeakerRow[], answers: Map<string, Answer>, requestedAt: Date, timeoutMs: number) {
  const live = new Map<string, ReturnType<typeof liveOf>>();
  const pollList = speakers.map((s) => {
    const answer = answers.get(s.id);
    live.set(
      s.id,
      answer
        ? liveOf(s.id, answer.report, answer.at.toISOString(), false, s)
        : liveOf(s.id, s.last_report as Report | null, s.last_report_at?.toISOString() ?? null, true, s),
    );
    return {
      speaker_id: s.id,
      requested_at: requestedAt.toISOString(),
      answered_at: answer ? answer.at.toISOString() : null,
      // A joined poll may have been answered before this caller asked.
      latency_ms: answer ? Math.max(0, answer.at.getTime() - requestedAt.getTime()) : null,
      ok: Boolean(answer),
      error: answer ? null : `no answer within ${timeoutMs} ms`,
    };
  });
  return { live, polls: pollList };
}
