import type { Clock } from "@rlc/shared/time";
import type { Bus } from "../bus/index.js";
import type { DeployService } from "../services/deploy/deploy.js";
import type { MaintenanceService } from "../services/operations/maintenance.js";
import type { PeriodicService } from "../services/operations/periodic.js";
import type { PeriodicTask } from "./scheduler.js";

// Each task is one call of a service: the work, its SQL and its rules live in services/.

/** Idempotency answers are kept 24 hours. */
export function idempotencyExpiryTask(periodic: Pick<PeriodicService, "expireIdempotencyRecords">): PeriodicTask {
  return { name: "idempotency_expiry", everyMs: 10 * 60_000, run: (now) => periodic.expireIdempotencyRecords(now) };
}

/** The deployment tenant's `runtime_logs_auto_*` policy, recorded as `auto:scheduler`. */
export function runtimeLogsAutoTask(periodic: Pick<PeriodicService, "runRuntimeLogsAuto">, everyMs = 60_000): PeriodicTask {
  return { name: "runtime_logs_auto", everyMs, run: (now) => periodic.runRuntimeLogsAuto(now) };
}

/** Modules with `refresh_interval_minutes` are refreshed on their own. */
export function moduleRefreshTask(periodic: Pick<PeriodicService, "enqueueDueRefreshes">, everyMs = 30_000): PeriodicTask {
  return { name: "module_refresh", everyMs, run: (now) => periodic.enqueueDueRefreshes(now) };
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
export function awaitingSweepTask(deploy: Pick<DeployService, "evaluateAwaiting">, clock: Clock, everyMs = 2000): PeriodicTask {
  return { name: "awaiting_sweep", everyMs, run: async () => void (await deploy.evaluateAwaiting(() => new Date(clock.now()))) };
}
