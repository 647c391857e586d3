import type { MaintenanceService } from "../services/operations/maintenance.js";
import type { JobHandler } from "./handler.js";

/**
 * maintenance_policy_run: runs one policy's actions; the run, what it deleted and its audit
 * records commit with the job's end (see MaintenanceService.runPolicy).
 */
export function maintenancePolicyRunJob(deps: { maintenance: MaintenanceService }): JobHandler {
  return {
    type: "maintenance_policy_run",
    priority: 0,
    maxAttempts: 3,
    run: (ctx) => deps.maintenance.runPolicy(ctx),
  };
}
