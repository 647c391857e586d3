import type { MaintenanceService } from "../services/operations/maintenance.js";
import type { JobHandler } from "./handler.js";

/**
 * revision_prune, enqueued by the scheduler from `revision_retention_minutes`: deletes the
 * revisions past the retention, never the current one, with its audit record in the transaction
 * that ends the job (MaintenanceService.runRevisionPrune).
 */
export function revisionPruneJob(deps: { maintenance: Pick<MaintenanceService, "runRevisionPrune"> }): JobHandler {
  return {
    type: "revision_prune",
    priority: 5,
    maxAttempts: 3,
    run: (ctx) => deps.maintenance.runRevisionPrune(ctx),
  };
}
