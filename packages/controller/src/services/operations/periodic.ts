import type { Sql } from "../../db/connect.js";
import { deleteExpiredIdempotencyRecords } from "../../db/idempotency.js";
import { listModulesDueForRefresh } from "../../db/ingest-inputs.js";
import { findLastRun, recordRun } from "../../db/scheduler.js";
import { findSettings } from "../../db/settings.js";
import { findTenantByName } from "../../db/tenants.js";
import { DEPLOYMENT_TENANT } from "../access/context.js";
import type { JobQueue } from "./jobs.js";
import { autoPolicyOf, type RuntimeLogService } from "./runtime-logs.js";

/** Idempotency answers are kept 24 hours. */
const IDEMPOTENCY_KEEP_MS = 24 * 3600_000;

/**
 * The scheduler's own work that is not a use case of another area: the scheduler's tasks
 * (`scheduler/tasks.ts`) each make one call here, to the maintenance service or to the deploy
 * service. Each method does one tick for every tenant that needs it; anything that takes time is
 * a job, so it is retried, cancellable and visible in `/v1/jobs`.
 */
export function createPeriodicService(deps: { sql: Sql; queue: Pick<JobQueue, "enqueue">; runtimeLogs: RuntimeLogService }) {
  const { sql } = deps;
  return {
    /** Forgets the idempotency answers older than a day. */
    async expireIdempotencyRecords(now: Date): Promise<void> {
      await deleteExpiredIdempotencyRecords(sql, new Date(now.getTime() - IDEMPOTENCY_KEEP_MS));
    },

    /**
     * The `runtime_logs_auto_*` policy of the deployment's tenant, recorded as `auto:scheduler`
     * (the log files are the deployment's; other tenants' settings of that name are ignored).
     */
    async runRuntimeLogsAuto(now: Date): Promise<void> {
      if (!deps.runtimeLogs.available) return;
      const home = await findTenantByName(sql, DEPLOYMENT_TENANT);
      if (!home) return;
      const policy = autoPolicyOf((await findSettings(sql, home.id)).settings);
      if (!policy.enabled) return;
      const last = await findLastRun(sql, "runtime_logs_auto", home.id);
      if (last && now.getTime() - last.getTime() < policy.intervalMinutes * 60_000) return;
      await deps.runtimeLogs.autoRun(home.id, now, { actor: "auto:scheduler", actorPrefix: "auto:scheduler" }, false);
      await recordRun(sql, "runtime_logs_auto", home.id, now);
    },

    /** A module_ingest job for each module whose `refresh_interval_minutes` has passed (and none pending). */
    async enqueueDueRefreshes(now: Date): Promise<void> {
      for (const due of await listModulesDueForRefresh(sql, now)) {
        const after: (() => void)[] = [];
        await sql.begin((tx) =>
          deps.queue.enqueue(tx, {
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

export type PeriodicService = ReturnType<typeof createPeriodicService>;
