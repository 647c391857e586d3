import type { Clock } from "@rlc/shared/time";
import type { Bus } from "../bus/index.js";
import type { Sql } from "../db/connect.js";
import { deleteExpiredIdempotencyRecords } from "../db/idempotency.js";
import { listModulesDueForRefresh } from "../db/ingest-inputs.js";
import { findLastRun, recordRun } from "../db/scheduler.js";
import { findSettings } from "../db/settings.js";
import { findTenantByName } from "../db/tenants.js";
import { evaluateAwaitingApplies } from "../jobs/apply-awaiting.js";
import type { JobMetrics } from "../metrics/controller-metrics.js";
import { DEPLOYMENT_TENANT } from "../services/access/context.js";
import { enqueueJob } from "../services/operations/jobs.js";
import type { MaintenanceService } from "../services/operations/maintenance.js";
import { autoPolicyOf, type RuntimeLogService } from "../services/operations/runtime-logs.js";
import type { PeriodicTask } from "./scheduler.js";

/** Idempotency answers are kept 24 hours. */
export function idempotencyExpiryTask(sql: Sql): PeriodicTask {
  return {
    name: "idempotency_expiry",
    everyMs: 10 * 60_000,
    async run(now) {
      await deleteExpiredIdempotencyRecords(sql, new Date(now.getTime() - 24 * 3600_000));
    },
  };
}

/**
 * The `runtime_logs_auto_*` policy of the deployment's tenant, recorded as `auto:scheduler`
 * (the log files are the deployment's; other tenants' settings of that name are ignored).
 */
export function runtimeLogsAutoTask(sql: Sql, logs: RuntimeLogService, everyMs = 60_000): PeriodicTask {
  return {
    name: "runtime_logs_auto",
    everyMs,
    async run(now) {
      if (!logs.available) return;
      const home = await findTenantByName(sql, DEPLOYMENT_TENANT);
      if (!home) return;
      const policy = autoPolicyOf((await findSettings(sql, home.id)).settings);
      if (!policy.enabled) return;
      const last = await findLastRun(sql, "runtime_logs_auto", home.id);
      if (last && now.getTime() - last.getTime() < policy.intervalMinutes * 60_000) return;
      await logs.autoRun(home.id, now, { actor: "auto:scheduler", actorPrefix: "auto:scheduler" }, false);
      await recordRun(sql, "runtime_logs_auto", home.id, now);
    },
  };
}

/** Modules with `refresh_interval_minutes` are refreshed on their own. */
export function moduleRefreshTask(sql: Sql, bus: Bus, everyMs = 30_000): PeriodicTask {
  return {
    name: "module_refresh",
    everyMs,
    async run(now) {
      for (const due of await listModulesDueForRefresh(sql, now)) {
        const after: (() => void)[] = [];
        await sql.begin((tx) =>
          enqueueJob(tx, bus, {
            tenantId: due.tenant_id,
            type: "module_ingest",
            params: { module_ids: [due.id], force: false },
            createdBy: "auto:scheduler",
            now,
            afterCommit: (f) => after.push(f),
          }),
        );
        for (const f of after) f();
      }
    },
  };
}

/** Enabled maintenance policies whose next_run_at has come get one run job each. */
export function maintenancePolicyTask(maintenance: MaintenanceService, bus: Bus, everyMs = 30_000): PeriodicTask {
  return { name: "maintenance_policies", everyMs, run: async (now) => void (await maintenance.scheduleDueRuns(bus, now)) };
}

/** Each tenant's `revision_retention_minutes`: a revision_prune job, looked at most every 10 minutes. */
export function revisionRetentionTask(maintenance: MaintenanceService, bus: Bus, everyMs = 60_000): PeriodicTask {
  return { name: "revision_retention", everyMs, run: async (now) => void (await maintenance.scheduleRevisionPrunes(bus, now)) };
}

/**
 * Ends awaiting jobs whose deadline has passed (their pending speakers: `timeout`), and
 * evaluates the others too, in case a report's notice was lost on the bus.
 */
export function awaitingSweepTask(sql: Sql, bus: Bus, clock: Clock, metrics?: JobMetrics, everyMs = 2000): PeriodicTask {
  return {
    name: "awaiting_sweep",
    everyMs,
    async run() {
      await evaluateAwaitingApplies({ sql, bus, now: () => new Date(clock.now()), metrics });
    },
  };
}
