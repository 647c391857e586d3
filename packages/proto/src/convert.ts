import { createHash } from "node:crypto";
import type { AgentAnnouncement } from "@rlc/shared/bundle";
import type {
  BirdInfo as BirdInfoSchema,
  ReportedSession,
  ReportReason as ReportReasonSchema,
  SentStatusReport,
  StatusError as StatusErrorSchema,
} from "@rlc/shared/schemas";
import { BUNDLE_CHUNK_MAX_BYTES } from "./loader.js";
import type { BgpSessionLive, BundleChunk, ReportReason, ReportStatusRequest, SigningKey, SigningKeyStatus, WatchEvent, WatchEventType } from "./messages.js";

// The JSON forms of the messages, as the HTTP node routes and NATS carry them (snake_case,
// null for "none"), and the conversions both ends use, so gRPC and HTTP say the same thing.

/** One BGP session as the agent sees it (the API's `BgpSessionLive`). */
export type BgpSessionLiveJson = ReportedSession;
export type ReportReasonJson = ReportReasonSchema;
export type StatusErrorJson = StatusErrorSchema;
export type BirdInfoJson = BirdInfoSchema;
/** The body of `POST /v1/speakers/{id}/status` and the JSON form of ReportStatusRequest. */
export type StatusReport = SentStatusReport;

/** A Watch event, or a message on NATS `rl.<tenant>.speakers.<speaker>.notify`. */
export type AgentNotification =
  | { type: "new_revision"; speaker_id: string; revision_id: number; digest: string; sequence: number | null }
  | { type: "live_poll"; poll_id: string }
  | { type: "ping" };

/** A signing key as `GET /v1/nodes/signing-keys` and enrollment list it. */
export interface SigningKeyJson {
  key_id: string;
  alg: string;
  public_key: string;
  status: "active" | "retired";
  created_at: string | null;
  /** The key statement (rl-key-statement/1) that introduced the key; null for the first key. */
  statement: unknown;
}

const REASONS: Record<ReportReasonJson, ReportReason> = {
  applied: "REPORT_REASON_APPLIED",
  apply_failed: "REPORT_REASON_APPLY_FAILED",
  live_poll: "REPORT_REASON_LIVE_POLL",
  sessions_changed: "REPORT_REASON_SESSIONS_CHANGED",
  started: "REPORT_REASON_STARTED",
};

const orEmpty = (v: string | null | undefined): string => v ?? "";
const orZero = (v: number | null | undefined): number => v ?? 0;
const orNull = (v: string | null | undefined): string | null => (v ? v : null);
const positiveOrNull = (v: number | null | undefined): number | null => (typeof v === "number" && v > 0 ? v : null);

/** The proto's announcement fields: empty lists for an agent that announces nothing. */
export function announcementToProto(a: AgentAnnouncement | null): { bundle_formats: string[]; capabilities: string[] } {
  return { bundle_formats: a ? [...a.bundle_formats] : [], capabilities: a ? [...a.capabilities] : [] };
}

/** The report as ReportStatusRequest, with what the agent accepts (null: nothing, as the release before sent). */
export function statusReportToProto(r: StatusReport, announced: AgentAnnouncement | null = null): ReportStatusRequest {
  return {
    speaker_id: r.speaker_id,
    reason: REASONS[r.reason] ?? "REPORT_REASON_UNSPECIFIED",
    poll_id: orEmpty(r.poll_id),
    applied_revision_id: orZero(r.applied_revision_id),
    applied_sequence: orZero(r.applied_sequence),
    applied_digest: orEmpty(r.applied_digest),
    applied_at: orEmpty(r.applied_at),
    error: r.error
      ? {
          code: r.error.code,
          message: r.error.message,
          revision_id: orZero(r.error.revision_id),
          sequence: orZero(r.error.sequence),
          at: r.error.at,
          check: orEmpty(r.error.check),
          sessions: r.error.sessions ?? [],
        }
      : null,
    bird: {
      reachable: r.bird.reachable,
      version: orEmpty(r.bird.version),
      router_id: orEmpty(r.bird.router_id),
      server_time: orEmpty(r.bird.server_time),
      last_reconfiguration: orEmpty(r.bird.last_reconfiguration),
    },
    sessions: r.sessions.map(sessionToProto),
    agent_version: r.agent_version,
    reported_at: r.reported_at,
    ...announcementToProto(announced),
  };
}

export function statusReportFromProto(m: ReportStatusRequest): StatusReport {
  const reason = (Object.keys(REASONS) as ReportReasonJson[]).find((k) => REASONS[k] === m.reason);
  return {
    speaker_id: m.speaker_id,
    // An older or newer agent's reason we do not know reads as a plain status change.
    reason: reason ?? "sessions_changed",
    poll_id: orNull(m.poll_id),
    applied_revision_id: positiveOrNull(m.applied_revision_id),
    applied_sequence: positiveOrNull(m.applied_sequence),
    applied_digest: orNull(m.applied_digest),
    applied_at: orNull(m.applied_at),
    error: m.error
      ? {
          code: m.error.code,
          message: m.error.message,
          revision_id: positiveOrNull(m.error.revision_id),
          sequence: positiveOrNull(m.error.sequence),
          at: m.error.at,
          // Only a probation verdict carries these; other errors read as before.
          ...(m.error.check ? { check: m.error.check, sessions: m.error.sessions ?? [] } : {}),
        }
      : null,
    bird: {
      reachable: m.bird?.reachable ?? false,
      version: orNull(m.bird?.version),
      router_id: orNull(m.bird?.router_id),
      server_time: orNull(m.bird?.server_time),
      last_reconfiguration: orNull(m.bird?.last_reconfiguration),
    },
    sessions: (m.sessions ?? []).map(sessionFromProto),
    agent_version: m.agent_version,
    reported_at: m.reported_at,
  };
}

export function sessionToProto(s: BgpSessionLiveJson): BgpSessionLive {
  return {
    protocol: s.protocol,
    peer_id: orEmpty(s.peer_id),
    neighbor_address: orEmpty(s.neighbor_address),
    remote_asn: orZero(s.remote_asn),
    state: s.state,
    bgp_state: orEmpty(s.bgp_state),
    since: orEmpty(s.since),
    routes_imported: s.routes_imported,
    routes_exported: s.routes_exported,
    last_error: orEmpty(s.last_error),
  };
}

export function sessionFromProto(s: BgpSessionLive): BgpSessionLiveJson {
  return {
    protocol: s.protocol,
    peer_id: orNull(s.peer_id),
    neighbor_address: orNull(s.neighbor_address),
    remote_asn: positiveOrNull(s.remote_asn),
    state: s.state,
    bgp_state: orNull(s.bgp_state),
    since: orNull(s.since),
    routes_imported: s.routes_imported,
    routes_exported: s.routes_exported,
    last_error: orNull(s.last_error),
  };
}

const EVENT_TYPES: Record<AgentNotification["type"], WatchEventType> = {
  new_revision: "WATCH_EVENT_TYPE_NEW_REVISION",
  live_poll: "WATCH_EVENT_TYPE_LIVE_POLL",
  ping: "WATCH_EVENT_TYPE_PING",
};

export function notificationToProto(n: AgentNotification, sentAt: string): WatchEvent {
  const event: WatchEvent = { type: EVENT_TYPES[n.type], speaker_id: "", revision_id: 0, digest: "", sequence: 0, poll_id: "", sent_at: sentAt };
  if (n.type === "new_revision") Object.assign(event, { speaker_id: n.speaker_id, revision_id: n.revision_id, digest: n.digest, sequence: orZero(n.sequence) });
  if (n.type === "live_poll") event.poll_id = n.poll_id;
  return event;
}

/** null for an event this version does not know (UNSPECIFIED or a newer type). */
export function notificationFromProto(e: WatchEvent): AgentNotification | null {
  switch (e.type) {
    case "WATCH_EVENT_TYPE_NEW_REVISION":
      if (!(e.revision_id > 0)) return null;
      return { type: "new_revision", speaker_id: e.speaker_id, revision_id: e.revision_id, digest: e.digest, sequence: positiveOrNull(e.sequence) };
    case "WATCH_EVENT_TYPE_LIVE_POLL":
      return e.poll_id ? { type: "live_poll", poll_id: e.poll_id } : null;
    case "WATCH_EVENT_TYPE_PING":
      return { type: "ping" };
    default:
      return null;
  }
}

/** Reads a notification from untrusted JSON (NATS); null when it is not one. */
export function notificationFromJson(value: unknown): AgentNotification | null {
  if (!value || typeof value !== "object") return null;
  const v = value as Record<string, unknown>;
  if (v.type === "ping") return { type: "ping" };
  if (v.type === "live_poll") return typeof v.poll_id === "string" && v.poll_id ? { type: "live_poll", poll_id: v.poll_id } : null;
  if (v.type !== "new_revision") return null;
  if (!Number.isSafeInteger(v.revision_id) || (v.revision_id as number) <= 0 || typeof v.digest !== "string" || typeof v.speaker_id !== "string") {
    return null;
  }
  const sequence = Number.isSafeInteger(v.sequence) && (v.sequence as number) > 0 ? (v.sequence as number) : null;
  return { type: "new_revision", speaker_id: v.speaker_id, revision_id: v.revision_id as number, digest: v.digest, sequence };
}

const KEY_STATUS: Record<SigningKeyJson["status"], SigningKeyStatus> = {
  active: "SIGNING_KEY_STATUS_ACTIVE",
  retired: "SIGNING_KEY_STATUS_RETIRED",
};

export function signingKeyToProto(k: SigningKeyJson): SigningKey {
  return {
    key_id: k.key_id,
    alg: k.alg,
    public_key: k.public_key,
    status: KEY_STATUS[k.status] ?? "SIGNING_KEY_STATUS_UNSPECIFIED",
    created_at: orEmpty(k.created_at),
    statement_json: k.statement ? JSON.stringify(k.statement) : "",
  };
}

/** Throws a SyntaxError when `statement_json` is not JSON. */
export function signingKeyFromProto(k: SigningKey): SigningKeyJson {
  return {
    key_id: k.key_id,
    alg: k.alg,
    public_key: k.public_key,
    // Unspecified reads as retired: a key is trusted to sign only when it says so.
    status: k.status === "SIGNING_KEY_STATUS_ACTIVE" ? "active" : "retired",
    created_at: orNull(k.created_at),
    statement: k.statement_json ? (JSON.parse(k.statement_json) as unknown) : null,
  };
}

/** The chunks GetBundle streams for `bytes`: the first names size, hash and revision. */
export function* bundleChunks(bytes: Uint8Array, revisionId: number, chunkBytes = BUNDLE_CHUNK_MAX_BYTES): Generator<BundleChunk> {
  const size = Math.max(1, Math.min(chunkBytes, BUNDLE_CHUNK_MAX_BYTES));
  const whole = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  const sha256 = createHash("sha256").update(whole).digest("hex");
  let offset = 0;
  do {
    const data = whole.subarray(offset, offset + size);
    const first = offset === 0;
    yield { data, offset, total_size: first ? whole.length : 0, sha256: first ? sha256 : "", revision_id: first ? revisionId : 0 };
    offset += data.length;
  } while (offset < whole.length);
}
