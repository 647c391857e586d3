import { type ApplyOutcomeEvent, type EventKind, type EventPayloads, eventSubject } from "@rlc/proto";
import type { Bus } from "../bus/index.js";

/**
 * Publishes one event on its subject (derived from the payload, which names the tenant and the
 * ids). Callers publish only what has committed: from `afterCommit`, or after the transaction
 * returned. Best effort like every bus message: the state itself lives in PostgreSQL.
 */
export function publishEvent<K extends EventKind>(bus: Bus, kind: K, payload: EventPayloads[K]): void {
  bus.publish(eventSubject(kind, payload), payload);
}

/** A job row as it ended. */
interface EndedJob {
  id: string;
  tenant_id: string;
  type: string;
  status: string;
  error: Record<string, unknown> | null;
  finished_at: Date | null;
}

/** `rl.v1.<tenant>.jobs.<id>.finished` for a job that ended; nothing for one still queued, running or awaiting. */
export function publishJobFinished(bus: Bus, job: EndedJob, now: Date): void {
  if (job.status !== "succeeded" && job.status !== "failed" && job.status !== "cancelled") return;
  const code = job.error && typeof job.error.code === "string" ? job.error.code : null;
  publishEvent(bus, "job_finished", {
    tenant_id: job.tenant_id,
    job_id: job.id,
    type: job.type,
    status: job.status,
    error_code: job.status === "succeeded" ? null : code,
    at: (job.finished_at ?? now).toISOString(),
  });
}

/** An apply job's outcome for one speaker, as the job records it. */
export interface RecordedOutcome {
  speaker_id: string;
  status: "applied" | "failed" | "timeout" | "superseded" | "deleted";
  error: Record<string, unknown> | null;
}

/**
 * The event's outcome: a `failed` speaker either refused the bundle (it never ran it: a bad
 * bundle, BIRD refused the configuration, the health check failed) or ran it, failed its
 * probation checks and went back (`reverted`, the agent's error code).
 */
export function applyOutcomeOf(o: RecordedOutcome): ApplyOutcomeEvent["outcome"] {
  if (o.status !== "failed") return o.status;
  return o.error?.code === "reverted" ? "reverted" : "refused";
}

export function publishApplyOutcome(bus: Bus, e: { tenantId: string; jobId: string; revisionId: number; outcome: RecordedOutcome; at: Date }): void {
  const error = e.outcome.error;
  publishEvent(bus, "apply", {
    tenant_id: e.tenantId,
    speaker_id: e.outcome.speaker_id,
    job_id: e.jobId,
    revision_id: e.revisionId,
    outcome: applyOutcomeOf(e.outcome),
    error: error ? { ...error, code: typeof error.code === "string" ? error.code : e.outcome.status } : null,
    at: e.at.toISOString(),
  });
}

/** A stored revision row (the columns the event carries). */
interface StoredRevision {
  tenant_id: string;
  revision_id: number;
  digest: string;
  reason: string;
  rolled_back_from: number | null;
  prefix_count_v4: number;
  prefix_count_v6: number;
  created_by: string | null;
  created_at: Date;
}

export function publishRevisionCreated(bus: Bus, r: StoredRevision): void {
  publishEvent(bus, "revision_created", {
    tenant_id: r.tenant_id,
    revision_id: r.revision_id,
    digest: r.digest,
    reason: r.reason,
    rolled_back_from: r.rolled_back_from,
    prefix_count_v4: r.prefix_count_v4,
    prefix_count_v6: r.prefix_count_v6,
    created_by: r.created_by,
    at: r.created_at.toISOString(),
  });
}
