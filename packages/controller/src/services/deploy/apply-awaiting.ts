import type { Bus } from "../../bus/index.js";
import type { Db, Sql } from "../../db/connect.js";
import type { JobRow } from "../../db/jobs.js";
import { listSpeakerOutcomes, type SpeakerOutcomeRow, setDispatchStatus } from "../../db/speakers.js";
import { publishApplyOutcome, type RecordedOutcome } from "../../events/publish.js";
import { problemBody } from "../../lib/problem.js";
import type { JobMetrics } from "../../metrics/controller-metrics.js";
import type { JobContext } from "../operations/job-context.js";
import type { JobQueue } from "../operations/jobs.js";
import type { Issued, IssueRequest } from "./issue-types.js";

export interface ApplyParams {
  revision_id: number;
  speaker_ids: string[];
  timeout_seconds: number;
  /** Skip the agents' session and route checks for this apply (a change meant to take a session down). */
  force_confirm?: boolean;
}

export type ApplyOutcome = {
  speaker_id: string;
  status: "applied" | "failed" | "timeout" | "superseded" | "deleted";
  error: Record<string, unknown> | null;
};

/** The agent's code for a bundle it could not fetch; it retries on its own backoff. */
const FETCH_FAILED = "fetch_failed";

/** What an awaiting apply waits for: the bundle issued to each speaker, and the outcomes so far. */
export interface ApplyAwaiting {
  revision_id: number;
  timeout_seconds: number;
  issued: { speaker_id: string; sequence: number; digest: string }[];
  outcomes: ApplyOutcome[];
}

/**
 * One speaker's outcome as its row now says, or null while it is still pending.
 * Applied: the agent reports the bundle's sequence (a re-issue for a peer change carries the
 * same revision number, so the revision alone is not enough), or it runs this revision with
 * the very digest issued — a re-push of what it runs: the agent has nothing to apply and so
 * never reports a newer sequence, and it is confirmed at once.
 * Failed: the agent reports the revision failed. A failed fetch (`fetch_failed`: the controller
 * busy or out of reach) is no outcome before the deadline: the agent retries it by itself and
 * usually applies on its next try; at the deadline it is the speaker's failure.
 */
function outcomeOf(row: SpeakerOutcomeRow | undefined, issued: ApplyAwaiting["issued"][number], revisionId: number, dueOut: boolean): ApplyOutcome | null {
  const id = issued.speaker_id;
  if (!row) return { speaker_id: id, status: "deleted", error: null };
  if (row.desired_revision_id !== revisionId) return { speaker_id: id, status: "superseded", error: null };
  const appliedSequence = row.applied_sequence === null ? 0 : Number(row.applied_sequence);
  if (row.applied_revision_id === revisionId && (appliedSequence >= issued.sequence || row.applied_digest === issued.digest)) {
    return { speaker_id: id, status: "applied", error: null };
  }
  const error = row.last_error as { code?: string; revision_id?: number; sequence?: number | null } | null;
  if (row.dispatch_status === "failed" && error?.revision_id === revisionId && (error.sequence == null || error.sequence >= issued.sequence)) {
    if (error.code === FETCH_FAILED && !dueOut) return null;
    return { speaker_id: id, status: "failed", error: row.last_error };
  }
  return null;
}

/** The problem a finished apply with failures answers (what `?wait=true` callers see). */
function applyFailure(revisionId: number, speakers: ApplyOutcome[]) {
  const failed = speakers.filter((s) => s.status === "failed" || s.status === "timeout");
  if (!failed.length) return null;
  const detail = failed.map((f) =>
    `${f.speaker_id}: ${(f.error as { code?: string } | null)?.code ?? f.status} ${(f.error as { message?: string } | null)?.message ?? ""}`.trim(),
  );
  return problemBody("apply_failed", `revision ${revisionId} failed on ${failed.length} speaker(s): ${detail.join("; ")}`, {
    extra: { revision_id: revisionId, speakers },
  });
}

/** What the evaluation of awaiting applies needs, handed to the deploy service at construction. */
export interface AwaitingDeps {
  sql: Sql;
  bus: Bus;
  /** Counts each apply's end and duration (the controller's /metrics); the replica that ends it counts it. */
  metrics?: JobMetrics | undefined;
  /** Writes the awaiting jobs' state: the queue owns every change of a job's state. */
  queue: AwaitingQueue;
}

/** What the evaluation asks of the job queue. */
export type AwaitingQueue = Pick<JobQueue, "lockAwaiting" | "recordAwaiting" | "finishAwaiting" | "announceEnded">;

/** A speaker's outcome decided by an evaluation, published once its transaction has committed. */
type DecidedOutcome = { job: JobRow; revisionId: number; outcome: RecordedOutcome };
/** An apply ended by an evaluation. */
type Ended = { job: JobRow; status: "succeeded" | "failed"; error: Record<string, unknown> | null; at: Date };

/** How the job ended, or null while it still waits; the speakers' outcomes it decided go to `outcomes`. */
async function evaluateOne(
  queue: AwaitingQueue,
  tx: Db,
  job: JobRow,
  speakers: Map<string, SpeakerOutcomeRow>,
  now: Date,
  outcomes: DecidedOutcome[],
): Promise<Omit<Ended, "job" | "at"> | null> {
  const a = job.awaiting as unknown as ApplyAwaiting;
  const p = job.params as unknown as ApplyParams;
  const resolved = new Map(a.outcomes.map((o) => [o.speaker_id, o]));
  const dueOut = job.deadline_at !== null && job.deadline_at.getTime() <= now.getTime();
  let changed = false;
  for (const issued of a.issued) {
    if (resolved.has(issued.speaker_id)) continue;
    let outcome = outcomeOf(speakers.get(issued.speaker_id), issued, a.revision_id, dueOut);
    if (!outcome && dueOut) {
      outcome = {
        speaker_id: issued.speaker_id,
        status: "timeout",
        error: { code: "timeout", message: `no report of revision ${a.revision_id} within ${a.timeout_seconds} s` },
      };
      await setDispatchStatus(tx, issued.speaker_id, "failed");
    }
    if (outcome) {
      resolved.set(issued.speaker_id, outcome);
      outcomes.push({ job, revisionId: a.revision_id, outcome });
      changed = true;
    }
  }
  const awaiting: ApplyAwaiting = { ...a, outcomes: [...resolved.values()] };
  const done = a.issued.filter((i) => resolved.has(i.speaker_id)).length;
  const total = a.issued.length;
  if (resolved.size < p.speaker_ids.length && !dueOut) {
    if (changed) await queue.recordAwaiting(tx, job.id, { awaiting, done, total, now });
    return null;
  }
  const ordered = p.speaker_ids.map((id) => resolved.get(id)).filter((o): o is ApplyOutcome => o !== undefined);
  const failure = applyFailure(a.revision_id, ordered);
  const result = { revision_id: a.revision_id, speakers: ordered };
  const ended = await queue.finishAwaiting(
    tx,
    job.id,
    failure ? { status: "failed", result, error: failure, awaiting, done, total, now } : { status: "succeeded", result, awaiting, done, total, now },
  );
  return ended ? { status: failure ? "failed" : "succeeded", error: failure } : null;
}

/**
 * Evaluates awaiting applies (one tenant's, or every tenant's for the sweep) against the
 * speakers' rows, in one transaction: ends those whose speakers all reported and those past
 * their deadline (pending speakers: `timeout`), and records the others' progress. Safe on any
 * number of replicas at once: the jobs are row-locked, and each end is an UPDATE … WHERE
 * status = 'awaiting'.
 */
export async function evaluateAwaiting(deps: AwaitingDeps, now: () => Date, f: { tenantId?: string } = {}): Promise<number> {
  const ended: Ended[] = [];
  const outcomes: DecidedOutcome[] = [];
  let at = now();
  await deps.sql.begin(async (tx) => {
    const jobs = await deps.queue.lockAwaiting(tx, { type: "apply", ...(f.tenantId ? { tenantId: f.tenantId } : {}) });
    at = now();
    for (const job of jobs) {
      // Only the speakers the job still waits for: late in a large apply, a report concerns a few.
      const a = job.awaiting as unknown as ApplyAwaiting;
      const resolved = new Set(a.outcomes.map((o) => o.speaker_id));
      const pending = a.issued.filter((i) => !resolved.has(i.speaker_id)).map((i) => i.speaker_id);
      const speakers = new Map((await listSpeakerOutcomes(tx, job.tenant_id, pending)).map((s) => [s.id, s]));
      const end = await evaluateOne(deps.queue, tx, job, speakers, at, outcomes);
      if (end) ended.push({ job, ...end, at });
    }
  });
  for (const o of outcomes) publishApplyOutcome(deps.bus, { tenantId: o.job.tenant_id, jobId: o.job.id, revisionId: o.revisionId, outcome: o.outcome, at });
  for (const e of ended) deps.queue.announceEnded({ ...e.job, status: e.status, error: e.error, finished_at: at }, at);
  for (const e of ended) recordApplyEnd(deps.metrics, e);
  return ended.length;
}

/** After the commit: an apply's end, counted by the replica that ended it. */
function recordApplyEnd(metrics: JobMetrics | undefined, o: Ended) {
  if (!metrics) return;
  const started = o.job.started_at ?? o.job.created_at;
  metrics.applyEnded(o.status, Math.max(0, (o.at.getTime() - started.getTime()) / 1000));
  if (o.status === "failed") metrics.failed(o.job.type, "apply_failed");
}

/**
 * The apply job's work: issues each speaker's bundle (`issue`, in batches) and parks the job as
 * `awaiting`, so no worker slot waits for the agents; their reports (through the bus) or the
 * scheduler's deadline sweep end it (evaluateAwaiting), whatever the agents' state now. The
 * evaluation at the end settles the speakers already on this bundle (a re-push) and the reports
 * that came in while issuing.
 */
export async function runApply(
  deps: AwaitingDeps,
  issue: (tenantId: string, req: IssueRequest, now: () => Date) => Promise<Issued>,
  ctx: JobContext,
): Promise<undefined> {
  const p = ctx.job.params as unknown as ApplyParams;
  await ctx.checkpoint();
  const { issued, deleted } = await issue(ctx.job.tenant_id, p, ctx.now);
  const awaiting: ApplyAwaiting = {
    revision_id: p.revision_id,
    timeout_seconds: p.timeout_seconds,
    issued,
    outcomes: deleted.map((id) => ({ speaker_id: id, status: "deleted", error: null })),
  };
  const deadline = new Date(ctx.now().getTime() + p.timeout_seconds * 1000);
  await ctx.park({ awaiting, deadline, done: 0, total: issued.length });
  await evaluateAwaiting(deps, ctx.now, { tenantId: ctx.job.tenant_id });
  return undefined;
}
