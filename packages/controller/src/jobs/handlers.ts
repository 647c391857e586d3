import type { AppServices } from "../services/create-services.js";
import type { JobHandler } from "./handler.js";

export interface JobDeps {
  services: Pick<AppServices, "ingest" | "deploy" | "maintenance">;
}

/**
 * Every job type's handler, a row each: its lane, priority and attempts, and `run`, the one
 * service call that does the work (`handlers.test.ts` holds each to that one call).
 */
export function createJobHandlers({ services }: JobDeps): JobHandler[] {
  return [
    /**
     * module_ingest: collect, build and store a revision (IngestService.refresh); the revision
     * committer it goes through builds the prefix sections an apply of it will send in the same
     * transaction.
     */
    { type: "module_ingest", priority: 10, lane: "long", maxAttempts: 3, run: (ctx) => services.ingest.refresh(ctx) },
    /**
     * maintenance_policy_run: runs one policy's actions; the run, what it deleted and its audit
     * records commit with the job's end (MaintenanceService.runPolicy).
     */
    { type: "maintenance_policy_run", priority: 0, maxAttempts: 3, run: (ctx) => services.maintenance.runPolicy(ctx) },
    /**
     * revision_prune, enqueued by the scheduler from `revision_retention_minutes`: deletes the
     * revisions past the retention, never the current one, with its audit record in the
     * transaction that ends the job (MaintenanceService.runRevisionPrune).
     */
    { type: "revision_prune", priority: 5, maxAttempts: 3, run: (ctx) => services.maintenance.runRevisionPrune(ctx) },
    /**
     * apply: issues each speaker's bundle and parks the job as `awaiting`, so no worker slot waits
     * for the agents; their reports or the scheduler's deadline sweep end it (DeployService.runApply,
     * DeployService.evaluateAwaiting). One attempt: an apply is never issued twice by a retry.
     */
    { type: "apply", priority: 5, maxAttempts: 1, run: (ctx) => services.deploy.runApply(ctx) },
    /** peer_reconcile: the speakers of a changed peer get the current revision again (DeployService.reconcilePeer). */
    {
      type: "peer_reconcile",
      priority: 0,
      maxAttempts: 3,
      run(ctx) {
        const params = ctx.job.params as { peer_id: string; speaker_ids: string[] };
        return services.deploy.reconcilePeer(ctx.job.tenant_id, params.speaker_ids, `job:${ctx.job.id}`, ctx.now, (fn) => ctx.complete(fn));
      },
    },
  ];
}

/** The handler of one job type (a test, or a worker that runs only that type). */
export function jobHandler(deps: JobDeps, type: JobHandler["type"]): JobHandler {
  const handler = createJobHandlers(deps).find((h) => h.type === type);
  if (!handler) throw new Error(`no handler for job type ${type}`);
  return handler;
}
