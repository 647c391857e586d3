import { ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import type { Bus } from "../../bus/index.js";
import { listBundlesExpiringBefore } from "../../db/bundles.js";
import type { Db, Sql } from "../../db/connect.js";
import { findCurrentRevision, findRevision } from "../../db/revisions.js";
import { findSpeakerById, listAllSpeakers, setDesiredRevision, setDesiredRevisions, setDispatchStatus } from "../../db/speakers.js";
import type { JobMetrics } from "../../metrics/controller-metrics.js";
import type { AuditWriter } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";
import type { JobContext } from "../operations/job-context.js";
import type { JobQueue } from "../operations/jobs.js";
import type { RevisionSplices } from "../revisions/revision-commit.js";
import type { AgentNotifier } from "./agent-notifier.js";
import { type AwaitingQueue, evaluateAwaiting, runApply } from "./apply-awaiting.js";
import type { Issued, IssueRequest } from "./issue-types.js";

export type { Issued, IssueRequest };

import { ensureDeltaSection, prepareSections } from "./bundle-sections.js";
import { type BundleDeps, type IssueContext, issueBundle, issueBundles, issueContext } from "./bundles.js";

export interface ApplyRequest {
  revision_id?: number | undefined;
  speaker_ids?: string[] | undefined;
  timeout_seconds?: number | undefined;
  /** The agents skip their probation's session and route checks (a change meant to take a session down). */
  force_confirm?: boolean | undefined;
}

/**
 * Speakers issued per transaction. A batch's agents are woken when it commits; a small batch
 * wakes the first ones sooner, a large one costs fewer round trips (three statements a batch).
 */
export const ISSUE_BATCH = 100;

/** Bundles live 7 days; the desired revision's is signed again once less than this is left. */
export const REISSUE_BEFORE_EXPIRY_MS = 2 * 24 * 3600_000;

export interface DeployDeps extends BundleDeps {
  sql: Sql;
  bus: Bus;
  audit: AuditWriter;
  /** Wakes the agents, signed (the bus alone carries no proof of who sent a wake-up). */
  notifier: AgentNotifier;
  /** Counts each apply's end and duration (the controller's /metrics). */
  metrics?: JobMetrics | undefined;
  /** The job queue an apply is enqueued on (with the tenant's queue cap), and whose awaiting state the evaluation writes. */
  queue: Pick<JobQueue, "enqueue"> & AwaitingQueue;
}

interface ApplyScope {
  tenantId: string;
  now: Date;
  afterCommit: RequestContext["afterCommit"];
}

/**
 * The deploy use cases: starting an apply (POST /v1/apply, a speaker's apply, a rollback with
 * `apply`, a peer change), issuing the bundles of an apply job, and re-issuing bundles before
 * they expire.
 */
export function createDeployService(deps: DeployDeps) {
  /** The deltas from the revisions `speakerIds` run, built (or joined) on the pool into `ctx`. */
  async function prepareDeltas(ctx: IssueContext, speakerIds: readonly string[]) {
    const wanted = new Set(speakerIds);
    const bases = new Set<number>();
    for (const s of await listAllSpeakers(deps.sql, ctx.tenantId)) {
      if (wanted.has(s.id) && s.applied_revision_id !== null && s.applied_revision_id !== ctx.revisionId) bases.add(s.applied_revision_id);
    }
    for (const base of bases) {
      const delta = await ensureDeltaSection(deps.sql, deps, ctx.tenantId, base, ctx.full);
      ctx.deltas.set(base, Promise.resolve(delta));
    }
  }

  /** Checks the revision and the speakers, records the apply in the audit and enqueues the `apply` job, all in `tx`. */
  async function startApply(tx: Db, scope: ApplyScope, req: ApplyRequest, createdBy: string) {
    const tenantId = scope.tenantId;
    const revision = req.revision_id === undefined ? await findCurrentRevision(tx, tenantId) : await findRevision(tx, tenantId, req.revision_id);
    if (!revision) {
      if (req.revision_id !== undefined) throw new NotFoundError("revision", req.revision_id);
      throw new ConflictError("there is no revision to apply yet: refresh a module first");
    }
    const all = await listAllSpeakers(tx, tenantId);
    let speakerIds = all.map((s) => s.id);
    if (req.speaker_ids) {
      const known = new Set(speakerIds);
      const unknown = req.speaker_ids.filter((id) => !known.has(id));
      if (unknown.length) throw new ValidationError(`unknown speaker(s): ${unknown.join(", ")}`, [{ path: "body.speaker_ids", message: "unknown speaker" }]);
      speakerIds = [...new Set(req.speaker_ids)];
    }
    if (!speakerIds.length) throw new ConflictError("there is no speaker to apply to: create one first");
    const job = await deps.queue.enqueue(tx, {
      tenantId,
      type: "apply",
      params: {
        revision_id: revision.revision_id,
        speaker_ids: speakerIds,
        timeout_seconds: req.timeout_seconds ?? 120,
        ...(req.force_confirm ? { force_confirm: true } : {}),
      },
      createdBy,
      now: scope.now,
      afterCommit: scope.afterCommit,
      maxAttempts: 1,
    });
    await deps.audit.recordSystem(tx, tenantId, scope.now, {
      actor: createdBy,
      action: "apply",
      resource_type: "revision",
      resource_id: String(revision.revision_id),
      summary: `revision ${revision.revision_id} applied to ${speakerIds.length} speaker(s) (job ${job.id})${req.force_confirm ? " with force_confirm: the agents' session and route checks are skipped" : ""}`,
      ...(req.force_confirm ? { changes: { force_confirm: { from: null, to: true } } } : {}),
    });
    return job;
  }

  const scopeOf = (ctx: RequestContext): ApplyScope => ({ tenantId: ctx.principal.tenantId, now: ctx.now, afterCommit: ctx.afterCommit });
  const notify = (tenantId: string, speakerId: string, revisionId: number, b: { digest: string; sequence: number }) =>
    void deps.notifier.notify(tenantId, speakerId, { type: "new_revision", revision_id: revisionId, digest: b.digest, sequence: b.sequence }).catch(() => {}); // a wake-up is a hint: the agent's poll finds the revision all the same

  /**
   * An apply job's issuing, in batches of ISSUE_BATCH speakers: each batch sets its speakers'
   * desired revision and stores their signed bundles in one transaction, and its agents are
   * woken as soon as it commits, so the first ones fetch while the next batch is signed. The
   * desired revision stays in the database, so an agent that is offline now applies it when
   * it connects. A failing batch fails the job; the batches before it stay issued (each
   * speaker's desired revision and bundle commit together).
   */
  async function issue(tenantId: string, req: IssueRequest, now: () => Date): Promise<Issued> {
    const out: Issued = { issued: [], deleted: [] };
    // On the pool, before the batches: the refresh committed the sections with the revision,
    // so this finds them (or builds one it could not, joining a build under way in this
    // process), and the deltas from the revisions these speakers run are ready before the
    // first batch's transaction opens.
    const ctx = await issueContext(deps.sql, deps, tenantId, req.revision_id);
    await prepareDeltas(ctx, req.speaker_ids);
    for (let i = 0; i < req.speaker_ids.length; i += ISSUE_BATCH) {
      const batch = req.speaker_ids.slice(i, i + ISSUE_BATCH);
      const issued = await deps.sql.begin(async (tx) => {
        const speakers = await setDesiredRevisions(tx, tenantId, batch, req.revision_id, now());
        return issueBundles(tx, deps, ctx, speakers, now(), { forceConfirm: req.force_confirm === true });
      });
      const found = new Set(issued.map((b) => b.speaker_id));
      out.deleted.push(...batch.filter((id) => !found.has(id)));
      out.issued.push(...issued);
      for (const b of issued) notify(tenantId, b.speaker_id, req.revision_id, b);
    }
    return out;
  }

  return {
    /** Enqueues an apply of `req` for the caller, in the caller's transaction. */
    apply: (tx: Db, ctx: RequestContext, req: ApplyRequest) => startApply(tx, scopeOf(ctx), req, `key:${ctx.principal.keyPrefix}`),

    /** The same for one speaker, which must exist in the caller's tenant (404 otherwise). */
    async applyToSpeaker(tx: Db, ctx: RequestContext, speakerId: string, req: Omit<ApplyRequest, "speaker_ids">) {
      if (!(await findSpeakerById(tx, ctx.principal.tenantId, speakerId))) throw new NotFoundError("speaker", speakerId);
      return startApply(tx, scopeOf(ctx), { ...req, speaker_ids: [speakerId] }, `key:${ctx.principal.keyPrefix}`);
    },

    /**
     * peer_reconcile: a peer changed. No ingest and no collection: the speakers that had or
     * have the peer get the current revision again (their bundles now carry the new peer set).
     * `commit` runs the apply's enqueue in the transaction that ends the reconcile job.
     */
    async reconcilePeer(
      tenantId: string,
      peerSpeakerIds: string[],
      createdBy: string,
      now: () => Date,
      commit: <R extends Record<string, unknown>>(fn: (tx: Db) => Promise<R>) => Promise<R>,
    ): Promise<Record<string, unknown>> {
      if (!peerSpeakerIds.length) return { apply_job_id: null, reason: "the peer is on no speaker" };
      if (!(await findCurrentRevision(deps.sql, tenantId))) return { apply_job_id: null, reason: "there is no revision yet" };
      const existing = new Set((await listAllSpeakers(deps.sql, tenantId)).map((s) => s.id));
      const speakerIds = peerSpeakerIds.filter((id) => existing.has(id));
      if (!speakerIds.length) return { apply_job_id: null, reason: "the peer's speakers are gone" };
      // The apply job commits with the reconcile job's end; workers find it at their next poll (≤ 1 s).
      return commit(async (tx) => {
        const job = await startApply(tx, { tenantId, now: now(), afterCommit: () => {} }, { speaker_ids: speakerIds }, createdBy);
        return { apply_job_id: job.id, speaker_ids: speakerIds };
      });
    },

    issue,

    /** The apply job's one call: issue the bundles, park the job awaiting the agents (apply-awaiting.ts). */
    runApply: (ctx: JobContext) => runApply(deps, issue, ctx),

    /**
     * Ends the awaiting applies (of one tenant, or every tenant's for the deadline sweep) whose
     * speakers all reported or whose deadline passed, and records the others' progress; answers
     * how many ended. Called on a speaker's report and by the scheduler's sweep.
     */
    evaluateAwaiting: (now: () => Date, f: { tenantId?: string } = {}) => evaluateAwaiting(deps, now, f),

    /** A new revision's prefix sections, built before an apply asks for them (bundle-sections.ts). */
    prepareSections: (db: Db, tenantId: string, revisionId: number, splices?: RevisionSplices) => prepareSections(db, deps, tenantId, revisionId, splices),

    /**
     * Re-issues the bundle of every speaker's desired revision that expires within two days: a
     * new sequence and expiry, the same content (so the same digest), and a notification, so
     * that an agent that restarts or reconnects later still finds a bundle it accepts. The
     * speaker's dispatch status is left as it was: an agent already running the revision has
     * nothing to apply and does not report again.
     */
    async reissueExpiring(now: Date): Promise<void> {
      const due = await listBundlesExpiringBefore(deps.sql, new Date(now.getTime() + REISSUE_BEFORE_EXPIRY_MS));
      const failures: unknown[] = [];
      for (const b of due) {
        try {
          const issued = await deps.sql.begin(async (tx) => {
            const speaker = await findSpeakerById(tx, b.tenant_id, b.speaker_id, true);
            // An apply may have moved the speaker on since the list was read: its bundle is new.
            if (!speaker || speaker.desired_revision_id !== b.revision_id) return null;
            const sequence = await setDesiredRevision(tx, speaker.id, b.revision_id, now);
            await setDispatchStatus(tx, speaker.id, speaker.dispatch_status);
            const bundle = await issueBundle(tx, deps, speaker, b.revision_id, sequence, now);
            return { sequence, digest: bundle.digest };
          });
          if (issued) notify(b.tenant_id, b.speaker_id, b.revision_id, issued);
        } catch (error) {
          failures.push(error); // one speaker's failure does not hold the others back
        }
      }
      if (failures.length) throw new AggregateError(failures, `${failures.length} of ${due.length} bundle re-issue(s) failed`);
    },
  };
}

export type DeployService = ReturnType<typeof createDeployService>;
