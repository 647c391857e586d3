import type { DeployService } from "../services/deploy/deploy.js";
import type { JobHandler } from "./handler.js";

/**
 * apply: issues each speaker's bundle and parks the job as `awaiting`, so no worker slot waits
 * for the agents; their reports or the scheduler's deadline sweep end it (DeployService.runApply,
 * DeployService.evaluateAwaiting).
 */
export function applyJob(deps: { deploy: Pick<DeployService, "runApply"> }): JobHandler {
  return {
    type: "apply",
    priority: 5,
    maxAttempts: 1,
    run: (ctx) => deps.deploy.runApply(ctx),
  };
}
