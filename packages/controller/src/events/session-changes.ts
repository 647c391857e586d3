import type { SessionChangedEvent, SessionState } from "@rlc/proto";

type ReportedSession = { protocol?: unknown; [k: string]: unknown };

const text = (v: unknown): string | null => (typeof v === "string" && v !== "" ? v : null);

function stateOf(s: ReportedSession): SessionState {
  return { state: text(s.state) ?? "unknown", bgp_state: text(s.bgp_state), since: text(s.since), last_error: text(s.last_error) };
}

function byProtocol(report: unknown): Map<string, ReportedSession> | null {
  const sessions = (report as { sessions?: unknown } | null)?.sessions;
  if (!Array.isArray(sessions)) return null;
  const map = new Map<string, ReportedSession>();
  for (const s of sessions)
    if (s && typeof s === "object" && typeof (s as ReportedSession).protocol === "string") map.set((s as { protocol: string }).protocol, s);
  return map;
}

/**
 * The sessions whose state or BGP state differ between a speaker's previous report and this
 * one, and those that appeared or went away. A report without a session list (an apply
 * failure, say) tells nothing about sessions: no change. The first report of a speaker (no
 * previous one) makes every session appear.
 */
export function sessionChanges(tenantId: string, speakerId: string, previous: unknown, current: unknown, at: Date): SessionChangedEvent[] {
  const now = byProtocol(current);
  if (!now) return [];
  const before = byProtocol(previous) ?? new Map<string, ReportedSession>();
  const changes: SessionChangedEvent[] = [];
  const event = (protocol: string, p: ReportedSession | undefined, c: ReportedSession | undefined): SessionChangedEvent => {
    const s = c ?? p ?? {};
    return {
      tenant_id: tenantId,
      speaker_id: speakerId,
      protocol,
      peer_id: text(s.peer_id),
      neighbor_address: text(s.neighbor_address),
      previous: p ? stateOf(p) : null,
      current: c ? stateOf(c) : null,
      at: at.toISOString(),
    };
  };
  for (const [protocol, c] of now) {
    const p = before.get(protocol);
    if (!p) changes.push(event(protocol, undefined, c));
    else {
      const a = stateOf(p);
      const b = stateOf(c);
      if (a.state !== b.state || a.bgp_state !== b.bgp_state) changes.push(event(protocol, p, c));
    }
  }
  for (const [protocol, p] of before) if (!now.has(protocol)) changes.push(event(protocol, p, undefined));
  return changes;
}
