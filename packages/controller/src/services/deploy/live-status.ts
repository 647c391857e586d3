import { eventSubjects, internalSubjects, parseEventSubject } from "@rlc/proto";
import type { Bus } from "../../bus/index.js";
import type { SpeakerRow } from "../../db/speakers.js";
import { uuidv7 } from "../../lib/ids.js";
import type { reportedSessions } from "./speakers.js";

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

/**
 * `GET /v1/speakers?live=true`: asks every listed speaker's agent for a fresh report at once
 * (over the bus, so whichever replica holds the agent's stream relays it), waits at most
 * `timeoutMs`, and marks the silent ones stale with their last report.
 */
export async function pollLiveStatus(bus: Bus, speakers: SpeakerRow[], timeoutMs: number) {
  const requestedAt = new Date();
  const polls = new Map(speakers.map((s) => [s.id, uuidv7()]));
  const answers = new Map<string, { report: Report; at: Date }>();
  let done: (() => void) | null = null;
  const unsubscribes = [...new Set(speakers.map((s) => s.tenant_id))].map((tenantId) =>
    bus.subscribe(eventSubjects.status(tenantId, "*"), (message, subject) => {
      // The speaker is the one the subject names, never what the message says: NATS lets an
      // agent publish only on its own status subject, so a poll_id answered on another
      // speaker's subject (or a speaker_id claimed in the body) proves nothing.
      const speakerId = speakerOfStatusSubject(tenantId, subject);
      const report = message as Report;
      if (!speakerId || typeof report !== "object" || report === null) return;
      const pollId = polls.get(speakerId);
      if (!pollId || report.poll_id !== pollId || answers.has(speakerId)) return;
      answers.set(speakerId, { report, at: new Date() });
      if (answers.size === polls.size) done?.();
    }),
  );
  try {
    for (const s of speakers) bus.publish(internalSubjects.notify(s.tenant_id, s.id), { type: "live_poll", poll_id: polls.get(s.id) });
    if (speakers.length) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        done = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    for (const u of unsubscribes) u();
  }
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
      latency_ms: answer ? answer.at.getTime() - requestedAt.getTime() : null,
      ok: Boolean(answer),
      error: answer ? null : `no answer within ${timeoutMs} ms`,
    };
  });
  return { live, polls: pollList };
}
