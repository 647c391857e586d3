import type { DeployService } from "../services/deploy/deploy.js";
import type { JobHandler } from "./handler.js";

/** peer_reconcile: the speakers of a changed peer get the current revision again (DeployService.reconcilePeer). */
export function peerReconcileJob(deps: { deploy: DeployService }): JobHandler {
  return {
    type: "peer_reconcile",
    priority: 0,
    maxAttempts: 3,
    run(ctx) {
      const params = ctx.job.params as { peer_id: string; speaker_ids: string[] };
      return deps.deploy.reconcilePeer(ctx.job.tenant_id, params.speaker_ids, `job:${ctx.job.id}`, ctx.now, (fn) => ctx.complete(fn));
    },
  };
}
