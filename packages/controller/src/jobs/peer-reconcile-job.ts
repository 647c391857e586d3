import type { Bus } from "../bus/index.js";
import type { Sql } from "../db/connect.js";
import { findCurrentRevision } from "../db/revisions.js";
import { listAllSpeakers } from "../db/speakers.js";
import type { AuditWriter } from "../services/audit.js";
import { startApply } from "../services/deploy.js";
import type { JobHandler } from "./handler.js";

/**
 * peer_reconcile: a peer changed. No ingest and no collection: the speakers that had or
 * have the peer get the current revision again (their bundles now carry the new peer set).
 */
export function peerReconcileJob(deps: { sql: Sql; bus: Bus; audit: AuditWriter }): JobHandler {
  return {
    type: "peer_reconcile",
    priority: 0,
    maxAttempts: 3,
    async run(ctx) {
      const tenantId = ctx.job.tenant_id;
      const params = ctx.job.params as { peer_id: string; speaker_ids: string[] };
      if (!params.speaker_ids.length) return { apply_job_id: null, reason: "the peer is on no speaker" };
      if (!(await findCurrentRevision(deps.sql, tenantId))) return { apply_job_id: null, reason: "there is no revision yet" };
      const existing = new Set((await listAllSpeakers(deps.sql, tenantId)).map((s) => s.id));
      const speakerIds = params.speaker_ids.filter((id) => existing.has(id));
      if (!speakerIds.length) return { apply_job_id: null, reason: "the peer's speakers are gone" };
      // The apply job commits with this job's end; workers find it at their next poll (≤ 1 s).
      return ctx.complete(async (tx) => {
        const job = await startApply(tx, { tenantId, now: ctx.now(), afterCommit: () => {} }, deps, { speaker_ids: speakerIds }, `job:${ctx.job.id}`);
        return { apply_job_id: job.id, speaker_ids: speakerIds };
      });
    },
  };
}
