import type { RevisionPruneEstimate, RevisionPruneResult as RevisionPruneResultSchema } from "@rlc/shared/schemas";
import type { z } from "zod";
import type { Bus } from "../../bus/index.js";
import type { Db, Sql } from "../../db/connect.js";
import { claimDueMaintenancePolicies, hasActiveJob, setMaintenancePolicyNextRun } from "../../db/maintenance.js";
import { findLastRun, listTenantIdsWithSettings, recordRun } from "../../db/scheduler.js";
import type { AuditEntry, AuditWriter } from "../access/audit.js";
import type { RoleName } from "../access/context.js";
import type { JobContext } from "./job-context.js";
import { enqueueJob } from "./jobs.js";

const MINUTE = 60_000;
/** The scheduler looks at a tenant's revision retention at most this often. */
export const REVISION_RETENTION_EVERY_MS = 10 * MINUTE;

/** What a `maintenance_policy_run` job carries: who asked (for its audit records) and why. */
export interface PolicyRunParams {
  policy_id: string;
  trigger: "api" | "scheduler";
  requested_by: { key_id: string; key_prefix: string; role: RoleName } | null;
  request_id: string | null;
}

/**
 * What maintenance asks of the revisions it prunes. Operations sits below revisions in the areas'
 * order (services/README.md), so it names what it needs here and create-services.ts hands it the
 * revision service, which answers it.
 */
type PruneEstimate = z.infer<typeof RevisionPruneEstimate>;
type RevisionPruneResult = z.infer<typeof RevisionPruneResultSchema>;

export interface RevisionPruning {
  pruneEstimate(db: Db, tenantId: string, now: Date): Promise<PruneEstimate>;
  pruneWith(tx: Db, tenantId: string, now: Date, dryRun: boolean, record: (entry: AuditEntry) => Promise<unknown>): Promise<RevisionPruneResult>;
}

/** The scheduler's side of maintenance: enqueueing policy runs and revision prunes when due, and the prune job's work. */
export function maintenanceScheduling(deps: { sql: Sql; revisions: RevisionPruning; audit: AuditWriter }) {
  return {
    /**
     * The revision_prune job's work: the revisions past the tenant's retention (never the
     * current one) deleted, with their audit record, in the transaction that ends the job. The
     * actor is whoever enqueued it (`auto:scheduler`).
     */
    async runRevisionPrune(ctx: JobContext): Promise<RevisionPruneResult> {
      const tenantId = ctx.job.tenant_id;
      const actor = ctx.job.created_by ?? "auto:scheduler";
      return ctx.complete(async (tx) => {
        const now = ctx.now();
        return deps.revisions.pruneWith(tx, tenantId, now, false, (entry) => deps.audit.recordSystem(tx, tenantId, now, { ...entry, actor }));
      });
    },

    /**
     * The scheduler's pass: each enabled policy whose time has come gets one run job (none when
     * one is still queued or running) and its next_run_at moves one interval past `now`, so a
     * scheduler that was down catches up with one run, not many.
     */
    async scheduleDueRuns(bus: Bus, now: Date): Promise<number> {
      const after: (() => void)[] = [];
      const enqueued = await deps.sql.begin(async (tx) => {
        let n = 0;
        for (const p of await claimDueMaintenancePolicies(tx, now, 100)) {
          if (!(await hasActiveJob(tx, p.tenant_id, "maintenance_policy_run", p.id))) {
            const params: PolicyRunParams = { policy_id: p.id, trigger: "scheduler", requested_by: null, request_id: null };
            await enqueueJob(tx, bus, {
              tenantId: p.tenant_id,
              type: "maintenance_policy_run",
              params: params as unknown as Record<string, unknown>,
              createdBy: "auto:scheduler",
              now,
              afterCommit: (f) => after.push(f),
            });
            n++;
          }
          await setMaintenancePolicyNextRun(tx, p.id, new Date(now.getTime() + p.interval_minutes * MINUTE));
        }
        return n;
      });
      for (const f of after) f();
      return enqueued;
    },

    /**
     * Each tenant's `revision_retention_minutes` (> 0): a `revision_prune` job when some revision
     * is past the retention and none is queued or running, looked at most every 10 minutes.
     */
    async scheduleRevisionPrunes(bus: Bus, now: Date): Promise<number> {
      let enqueued = 0;
      for (const { tenant_id, settings } of await listTenantIdsWithSettings(deps.sql)) {
        const minutes = settings.revision_retention_minutes;
        if (typeof minutes !== "number" || minutes <= 0) continue;
        const last = await findLastRun(deps.sql, "revision_retention", tenant_id);
        if (last && now.getTime() - last.getTime() < REVISION_RETENTION_EVERY_MS) continue;
        const est = await deps.revisions.pruneEstimate(deps.sql, tenant_id, now);
        const after: (() => void)[] = [];
        await deps.sql.begin(async (tx) => {
          if (est.candidate_count > 0 && !(await hasActiveJob(tx, tenant_id, "revision_prune"))) {
            await enqueueJob(tx, bus, {
              tenantId: tenant_id,
              type: "revision_prune",
              params: {},
              createdBy: "auto:scheduler",
              now,
              afterCommit: (f) => after.push(f),
            });
            enqueued++;
          }
          await recordRun(tx, "revision_retention", tenant_id, now);
        });
        for (const f of after) f();
      }
      return enqueued;
    },
  };
}
