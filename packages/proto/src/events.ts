// The payloads of the events on `rl.v1.<tenant>.…`: one zod schema each, the TypeScript types
// inferred from them, and a catalog pairing each with its subject. The controller publishes
// them, the AsyncAPI document (`/v1/asyncapi.json`) is generated from them, and tests check
// what they receive against them. Every payload is JSON and names its tenant and the time it
// happened (`at`, RFC 3339). Within v1 fields are only added: readers ignore what they do not know.
import { z } from "zod";
import { type EventKind, eventSubjects } from "./subjects.js";

const Time = z.string().meta({ format: "date-time", description: "RFC 3339 date-time." });
const TenantId = z.string().meta({ description: "The tenant (also the third token of the subject)." });
const SpeakerId = z.string().meta({ description: "The speaker (BIRD router) the event is about." });

/** The first members of every event about one speaker. */
const aboutSpeaker = { tenant_id: TenantId, speaker_id: SpeakerId };

/**
 * A session as one report saw it. Declared here rather than picked from the API's session schema:
 * importing @rlc/shared/schemas at run time would register SessionState after the API's schemas,
 * and the served OpenAPI document lists the registered schemas in that order.
 */
export const SessionState = z
  .object({
    state: z.string().meta({ description: "BIRD's protocol state (`up`, `down`, `start`, …)." }),
    bgp_state: z.string().nullable().meta({ description: "The BGP state (`Established`, `Active`, …), when BIRD tells it." }),
    since: z.string().nullable(),
    last_error: z.string().nullable(),
  })
  .meta({ id: "SessionState" });

export const StatusReportEvent = z
  .looseObject({
    ...aboutSpeaker,
    received_at: Time.meta({ description: "When the controller received the report." }),
    reason: z.enum(["applied", "apply_failed", "live_poll", "sessions_changed", "started"]),
    poll_id: z.string().nullable().optional(),
    applied_revision_id: z.number().int().nullable().optional(),
    applied_sequence: z.number().int().nullable().optional(),
    applied_digest: z.string().nullable().optional(),
    applied_at: z.string().nullable().optional(),
    error: z.looseObject({ code: z.string(), message: z.string(), revision_id: z.number().int().nullable().optional() }).nullable().optional(),
    bird: z.looseObject({ reachable: z.boolean() }).nullable().optional(),
    sessions: z.array(z.looseObject({ protocol: z.string() })).optional(),
    agent_version: z.string().nullable().optional(),
    reported_at: z.string().nullable().optional(),
  })
  .meta({
    id: "StatusReportEvent",
    description: "An agent's status report as the controller received and recorded it: what the speaker runs, its BIRD and its sessions.",
  });

export const SessionChangedEvent = z
  .object({
    ...aboutSpeaker,
    protocol: z.string().meta({ description: "The BIRD protocol name of the session." }),
    peer_id: z.string().nullable(),
    neighbor_address: z.string().nullable(),
    previous: SessionState.nullable().meta({ description: "As the speaker's previous report saw it; null when it was not there." }),
    current: SessionState.nullable().meta({ description: "As this report sees it; null when the session is gone." }),
    at: Time,
  })
  .meta({
    id: "SessionChangedEvent",
    description: "A BGP session whose state or BGP state differs from the speaker's previous report (or that appeared or went away).",
  });

export const ApplyOutcome = z.enum(["applied", "refused", "reverted", "timeout", "superseded", "deleted"]).meta({
  description:
    "`applied`: the speaker runs the bundle. `refused`: the agent would not apply it (bad bundle, BIRD refused the configuration, health check failed). " +
    "`reverted`: applied, failed its probation checks and rolled back. `timeout`: no report in time. `superseded`: a newer revision was asked for meanwhile. " +
    "`deleted`: the speaker was deleted.",
});

export const ApplyOutcomeEvent = z
  .object({
    ...aboutSpeaker,
    job_id: z.string().meta({ description: "The apply job." }),
    revision_id: z.number().int(),
    outcome: ApplyOutcome,
    error: z
      .looseObject({ code: z.string(), message: z.string().optional() })
      .nullable()
      .meta({ description: "What the agent reported, for refused and reverted." }),
    at: Time,
  })
  .meta({ id: "ApplyOutcomeEvent", description: "One speaker's outcome of an apply job, as soon as it is known." });

export const RevisionCreatedEvent = z
  .object({
    tenant_id: TenantId,
    revision_id: z.number().int(),
    digest: z.string(),
    reason: z.string().meta({ description: "`ingest` (a refresh) or `rollback`." }),
    rolled_back_from: z.number().int().nullable(),
    prefix_count_v4: z.number().int(),
    prefix_count_v6: z.number().int(),
    created_by: z.string().nullable(),
    at: Time,
  })
  .meta({ id: "RevisionCreatedEvent", description: "A new revision was stored and became the tenant's current one." });

export const JobFinishedEvent = z
  .object({
    tenant_id: TenantId,
    job_id: z.string(),
    type: z.string().meta({ description: "The job type (`module_ingest`, `apply`, …)." }),
    status: z.enum(["succeeded", "failed", "cancelled"]),
    error_code: z.string().nullable().meta({ description: "The problem code of a failed or cancelled job." }),
    at: Time,
  })
  .meta({ id: "JobFinishedEvent", description: "A job ended. Its result: GET /v1/jobs/{job_id}." });

export type StatusReportEvent = z.infer<typeof StatusReportEvent>;
export type SessionChangedEvent = z.infer<typeof SessionChangedEvent>;
export type ApplyOutcomeEvent = z.infer<typeof ApplyOutcomeEvent>;
export type RevisionCreatedEvent = z.infer<typeof RevisionCreatedEvent>;
export type JobFinishedEvent = z.infer<typeof JobFinishedEvent>;
export type SessionState = z.infer<typeof SessionState>;

/** The payload type of each event kind. */
export interface EventPayloads {
  status: StatusReportEvent;
  session: SessionChangedEvent;
  apply: ApplyOutcomeEvent;
  revision_created: RevisionCreatedEvent;
  job_finished: JobFinishedEvent;
}

export interface EventDefinition<K extends EventKind = EventKind> {
  kind: K;
  /** The subject with `{parameter}` placeholders, as AsyncAPI writes an address. */
  address: string;
  parameters: Record<string, string>;
  summary: string;
  schema: z.ZodType;
  /** The subject one payload goes to. */
  subjectOf(payload: EventPayloads[K]): string;
}

/** Every event subject is `rl.v1.{tenant_id}.<area>.{<id>}.<what>`: its AsyncAPI address and the description of its parameters. */
function channel(area: string, id: string, idDescription: string, what: string): Pick<EventDefinition, "address" | "parameters"> {
  return { address: `rl.v1.{tenant_id}.${area}.{${id}}.${what}`, parameters: { tenant_id: "The tenant.", [id]: idDescription } };
}

/** An event about one speaker: its subject ends in the kind (`rl.v1.<tenant>.speakers.<speaker>.<kind>`). */
function speakerEvent<K extends "status" | "session" | "apply">(kind: K, schema: z.ZodType, summary: string): EventDefinition<K> {
  return {
    kind,
    ...channel("speakers", "speaker_id", "The speaker.", kind),
    summary,
    schema,
    subjectOf: (p) => eventSubjects[kind](p.tenant_id, p.speaker_id),
  };
}

/** An event whose key in EVENTS is its kind. */
const event = <K extends EventKind>(kind: K, definition: Omit<EventDefinition<K>, "kind">): EventDefinition<K> => ({ kind, ...definition });

/** Every event: its subject, its payload schema. The AsyncAPI document lists them in this order. */
export const EVENTS: { [K in EventKind]: EventDefinition<K> } = {
  status: speakerEvent("status", StatusReportEvent, "Every status report an agent sends (after an apply, on a session change, on a live poll, at start)."),
  session: speakerEvent("session", SessionChangedEvent, "A BGP session changed state between two reports of its speaker."),
  apply: speakerEvent("apply", ApplyOutcomeEvent, "One speaker's outcome of an apply job."),
  revision_created: event("revision_created", {
    ...channel("revisions", "revision_id", "The new revision's number.", "created"),
    summary: "A refresh or a rollback stored a new revision.",
    schema: RevisionCreatedEvent,
    subjectOf: (p) => eventSubjects.revisionCreated(p.tenant_id, p.revision_id),
  }),
  job_finished: event("job_finished", {
    ...channel("jobs", "job_id", "The job.", "finished"),
    summary: "A job succeeded, failed or was cancelled.",
    schema: JobFinishedEvent,
    subjectOf: (p) => eventSubjects.jobFinished(p.tenant_id, p.job_id),
  }),
};

/** The subject an event goes to, from its own payload (which names the tenant and the ids). */
export function eventSubject<K extends EventKind>(kind: K, payload: EventPayloads[K]): string {
  return (EVENTS[kind] as EventDefinition<K>).subjectOf(payload);
}
