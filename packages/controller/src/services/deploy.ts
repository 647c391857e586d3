import { ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import type { Bus } from "../bus/index.js";
import type { Db } from "../db/connect.js";
import { findCurrentRevision, findRevision } from "../db/revisions.js";
import { listAllSpeakers } from "../db/speakers.js";
import type { AuditWriter } from "./audit.js";
import type { RequestContext } from "./context.js";
import { enqueueJob } from "./jobs.js";

export interface ApplyRequest {
  revision_id?: number | undefined;
  speaker_ids?: string[] | undefined;
  timeout_seconds?: number | undefined;
  /** The agents skip their probation's session and route checks (a change meant to take a session down). */
  force_confirm?: boolean | undefined;
}

/**
 * POST /v1/apply and /v1/speakers/{id}/apply: checks the revision and the speakers, records the
 * apply in the audit and enqueues the `apply` job, all in the caller's transaction.
 */
export async function startApply(
  tx: Db,
  ctx: { tenantId: string; now: Date; afterCommit: RequestContext["afterCommit"] },
  deps: { audit: AuditWriter; bus: Bus },
  req: ApplyRequest,
  createdBy: string,
) {
  const tenantId = ctx.tenantId;
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
  const job = await enqueueJob(tx, deps.bus, {
    tenantId,
    type: "apply",
    params: {
      revision_id: revision.revision_id,
      speaker_ids: speakerIds,
      timeout_seconds: req.timeout_seconds ?? 120,
      ...(req.force_confirm ? { force_confirm: true } : {}),
    },
    createdBy,
    now: ctx.now,
    afterCommit: ctx.afterCommit,
    maxAttempts: 1,
  });
  await deps.audit.recordSystem(tx, tenantId, ctx.now, {
    actor: createdBy,
    action: "apply",
    resource_type: "revision",
    resource_id: String(revision.revision_id),
    summary: `revision ${revision.revision_id} applied to ${speakerIds.length} speaker(s) (job ${job.id})${req.force_confirm ? " with force_confirm: the agents' session and route checks are skipped" : ""}`,
    ...(req.force_confirm ? { changes: { force_confirm: { from: null, to: true } } } : {}),
  });
  return job;
}
