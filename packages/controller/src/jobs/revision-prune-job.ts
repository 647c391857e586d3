import type { AuditWriter } from "../services/access/audit.js";
import type { RevisionService } from "../services/revisions/revisions.js";
import type { JobHandler } from "./handler.js";

/**
 * revision_prune, enqueued by the scheduler from `revision_retention_minutes`: deletes the
 * revisions past the retention — never the current one — and its audit record in the transaction
 * that ends the job. The actor is whoever enqueued it (`auto:scheduler`).
 */
export function revisionPruneJob(deps: { revisions: RevisionService; audit: AuditWriter }): JobHandler {
  return {
    type: "revision_prune",
    priority: 5,
    maxAttempts: 3,
    async run(ctx) {
      const tenantId = ctx.job.tenant_id;
      const actor = ctx.job.created_by ?? "auto:scheduler";
      return ctx.complete(async (tx) => {
        const now = ctx.now();
        return deps.revisions.pruneWith(tx, tenantId, now, false, (entry) => deps.audit.recordSystem(tx, tenantId, now, { ...entry, actor }));
      });
    },
  };
}
