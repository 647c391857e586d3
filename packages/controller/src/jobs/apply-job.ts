import type { Bus } from "../bus/index.js";
import type { Sql } from "../db/connect.js";
import type { DeployService } from "../services/deploy/deploy.js";
import { type ApplyAwaiting, type ApplyParams, evaluateAwaitingApplies } from "./apply-awaiting.js";
import type { JobHandler } from "./handler.js";

/**
 * apply: issues each speaker's bundle (DeployService.issue) and parks the job as `awaiting`: no
 * worker slot waits for the agents. Their reports (apply-awaiting.ts, through the bus) or the
 * scheduler's deadline sweep end it, whatever the agents' state now.
 */
export function applyJob(deps: { sql: Sql; bus: Bus; deploy: DeployService }): JobHandler {
  return {
    type: "apply",
    priority: 5,
    maxAttempts: 1,
    async run(ctx) {
      const p = ctx.job.params as unknown as ApplyParams;
      await ctx.checkpoint();
      const { issued, deleted } = await deps.deploy.issue(ctx.job.tenant_id, p, ctx.now);
      const awaiting: ApplyAwaiting = {
        revision_id: p.revision_id,
        timeout_seconds: p.timeout_seconds,
        issued,
        outcomes: deleted.map((id) => ({ speaker_id: id, status: "deleted", error: null })),
      };
      const deadline = new Date(ctx.now().getTime() + p.timeout_seconds * 1000);
      await ctx.park({ awaiting, deadline, done: 0, total: issued.length });
      // Speakers already on this bundle (a re-push) and reports that came in while issuing.
      await evaluateAwaitingApplies({ sql: deps.sql, bus: deps.bus, now: ctx.now }, { tenantId: ctx.job.tenant_id });
      return undefined;
    },
  };
}
