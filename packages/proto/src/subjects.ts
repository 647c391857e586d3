// Every NATS subject the controller and the agent use, defined once. Two families:
//
// - Events (`rl.v1.<tenant>.…`): what happened, for dashboards and other readers. Documented in
//   the AsyncAPI document (`/v1/asyncapi.json`), kept for a while in the tenant's JetStream
//   stream. Versioned: within v1 fields are only added; a change that would break a reader gets
//   new `rl.v2.…` subjects.
// - Internal wake-ups (`rl.<tenant>.speakers.<id>.notify`, `rl.<tenant>.lookup.changed`,
//   `rl.jobs.wake`): between the controller's replicas and the agents, never kept, no promise to
//   anyone else. Their shape is the agent's and the controller's, shipped together.
//
// Ids go into subjects verbatim: a dot or a wildcard in one would widen a subscription or a
// permission, so every builder refuses anything but a plain token (or `*` where a pattern is
// wanted).

/** The version of the event subjects (`rl.v1.…`). */
export const EVENTS_VERSION = "v1";

const TOKEN = /^[A-Za-z0-9_-]+$/;

/** An id usable as one subject token; anything else (a dot, a wildcard, a space) throws. */
export function subjectToken(value: string): string {
  if (!TOKEN.test(value)) throw new Error(`not usable in a NATS subject: ${JSON.stringify(value)}`);
  return value;
}

/** A token, or `*` for "any" (subscriptions only). */
const tokenOrAny = (value: string) => (value === "*" ? value : subjectToken(value));

/** Subject builders of the events; pass `*` for a token to get a subscription pattern. */
export const eventSubjects = {
  /** Everything one tenant publishes (a monitoring user's whole view). */
  tenant: (tenantId: string) => `rl.v1.${tokenOrAny(tenantId)}.>`,
  /** A status report of an agent, as the controller received it. */
  status: (tenantId: string, speakerId: string) => `rl.v1.${tokenOrAny(tenantId)}.speakers.${tokenOrAny(speakerId)}.status`,
  /** A BGP session whose state differs from the speaker's previous report. */
  session: (tenantId: string, speakerId: string) => `rl.v1.${tokenOrAny(tenantId)}.speakers.${tokenOrAny(speakerId)}.session`,
  /** One speaker's outcome of an apply job (applied, refused, reverted, …). */
  apply: (tenantId: string, speakerId: string) => `rl.v1.${tokenOrAny(tenantId)}.speakers.${tokenOrAny(speakerId)}.apply`,
  /** A revision was built and stored. */
  revisionCreated: (tenantId: string, revisionId: number | "*") =>
    `rl.v1.${tokenOrAny(tenantId)}.revisions.${revisionId === "*" ? "*" : subjectToken(String(revisionId))}.created`,
  /** A job ended (succeeded, failed or cancelled). */
  jobFinished: (tenantId: string, jobId: string) => `rl.v1.${tokenOrAny(tenantId)}.jobs.${tokenOrAny(jobId)}.finished`,
} as const;

export type EventKind = "status" | "session" | "apply" | "revision_created" | "job_finished";

/** What an event subject names; null for anything that is not a v1 event subject. */
export type ParsedEventSubject =
  | { kind: "status" | "session" | "apply"; tenantId: string; speakerId: string }
  | { kind: "revision_created"; tenantId: string; revisionId: number }
  | { kind: "job_finished"; tenantId: string; jobId: string };

export function parseEventSubject(subject: string): ParsedEventSubject | null {
  const p = subject.split(".");
  if (p.length !== 6 || p[0] !== "rl" || p[1] !== EVENTS_VERSION || !p.every((t) => TOKEN.test(t))) return null;
  const [, , tenantId, area, id, what] = p as [string, string, string, string, string, string];
  if (area === "speakers" && (what === "status" || what === "session" || what === "apply")) return { kind: what, tenantId, speakerId: id };
  if (area === "revisions" && what === "created" && /^\d+$/.test(id)) return { kind: "revision_created", tenantId, revisionId: Number(id) };
  if (area === "jobs" && what === "finished") return { kind: "job_finished", tenantId, jobId: id };
  return null;
}

/** Subject builders of the internal wake-ups (not events: no history, no promise to readers). */
export const internalSubjects = {
  /** The controller wakes one agent (a new revision, a live poll). */
  notify: (tenantId: string, speakerId: string) => `rl.${tokenOrAny(tenantId)}.speakers.${tokenOrAny(speakerId)}.notify`,
  /** A tenant's lookup inputs changed: every replica drops its lookup view. */
  lookupChanged: (tenantId: string) => `rl.${tokenOrAny(tenantId)}.lookup.changed`,
  /** A job was enqueued: idle workers of every replica look for work. */
  jobsWake: "rl.jobs.wake",
} as const;

/** The tenant of an internal `rl.<tenant>.…` subject (`rl.jobs.wake` has none). */
export function tenantOfInternalSubject(subject: string): string | null {
  const p = subject.split(".");
  return p.length >= 3 && p[0] === "rl" && p[1] !== EVENTS_VERSION && p[1] !== "jobs" && TOKEN.test(p[1] ?? "") ? (p[1] ?? null) : null;
}

/**
 * The JetStream stream keeping one tenant's events (`rl.v1.<tenant>.>`). One stream per tenant,
 * not one for all: a monitoring user may then create consumers and fetch from its own tenant's
 * stream only, which NATS permissions can say (they match whole subject tokens, so "consumers of
 * this tenant inside a shared stream" could not be told apart by name).
 */
export const eventStreamName = (tenantId: string) => `RL_EVENTS_V1_${subjectToken(tenantId)}`;

/**
 * The inbox prefix a tenant's monitoring user must connect with (`inboxPrefix` in nats.js,
 * `--inbox-prefix` for the nats CLI): the replies of its stream reads arrive there, and no other
 * tenant's user may subscribe to it.
 */
export const monitoringInboxPrefix = (tenantId: string) => `_INBOX_${subjectToken(tenantId)}`;
