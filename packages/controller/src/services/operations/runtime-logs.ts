import { AppError } from "@rlc/shared/errors";
import type { Config } from "../../config.js";
import type { Db, Sql } from "../../db/connect.js";
import { type CleanupAuditRow, insertCleanupAudit, listCleanupAudit } from "../../db/runtime-log-audit.js";
import { toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { isoRequired } from "../../lib/time.js";
import type { RequestContext } from "../access/context.js";
import { type CleanupMode, cleanupLogFile, estimateAutoCleanup, listLogFiles, runAutoCleanup, tailLogFile } from "./runtime-log-files.js";
import { readTenantSettings } from "./settings.js";

/** Used when the tenant settings say nothing (`runtime_logs_auto_*`). */
export const RUNTIME_LOG_DEFAULTS = { thresholdBytes: 100 * 1024 * 1024, mode: "truncate" as CleanupMode, intervalMinutes: 60 };

export interface AutoPolicy {
  enabled: boolean;
  thresholdBytes: number;
  mode: CleanupMode;
  intervalMinutes: number;
}

export function autoPolicyOf(settings: Record<string, unknown>): AutoPolicy {
  return {
    enabled: settings.runtime_logs_auto_enabled === true,
    thresholdBytes:
      typeof settings.runtime_logs_auto_threshold_bytes === "number" ? settings.runtime_logs_auto_threshold_bytes : RUNTIME_LOG_DEFAULTS.thresholdBytes,
    mode: settings.runtime_logs_auto_mode === "delete" ? "delete" : RUNTIME_LOG_DEFAULTS.mode,
    intervalMinutes:
      typeof settings.runtime_logs_auto_interval_minutes === "number" ? settings.runtime_logs_auto_interval_minutes : RUNTIME_LOG_DEFAULTS.intervalMinutes,
  };
}

const toRecord = (row: CleanupAuditRow) => ({
  id: row.id,
  at: isoRequired(row.at),
  actor: row.actor,
  actor_prefix: row.actor_prefix,
  filename: row.filename,
  mode: row.mode,
  bytes_before: row.bytes_before === null ? null : Number(row.bytes_before),
  bytes_after: row.bytes_after === null ? null : Number(row.bytes_after),
  dry_run: row.dry_run,
  result: row.result,
  error: row.error,
});

export interface Actor {
  actor: string;
  actorPrefix: "manual" | "auto:api" | "auto:scheduler";
}

/** File operations only with APP_SERVICE=app-all and APP_RUNTIME_LOGS_DIR; otherwise a 503. */
export function createRuntimeLogService(deps: { config: Config; sql: Sql }) {
  const dir = deps.config.APP_SERVICE === "app-all" && deps.config.APP_RUNTIME_LOGS_DIR ? deps.config.APP_RUNTIME_LOGS_DIR : null;
  const requireDir = () => {
    if (!dir) {
      throw new AppError("runtime_logs_unavailable", "runtime-log file operations need APP_SERVICE=app-all and APP_RUNTIME_LOGS_DIR to be set");
    }
    return dir;
  };
  const record = async (db: Db, tenantId: string, at: Date, actor: Actor, r: Omit<CleanupAuditRow, "id" | "tenant_id" | "at" | "actor" | "actor_prefix">) => {
    const row: CleanupAuditRow = { id: uuidv7(), tenant_id: tenantId, at, actor: actor.actor, actor_prefix: actor.actorPrefix, ...r };
    await insertCleanupAudit(db, row);
    return toRecord(row);
  };

  return {
    available: dir !== null,
    async list() {
      return { ...(await listLogFiles(requireDir())), next_cursor: null, has_more: false as const };
    },
    async tail(name: string, q: { lines?: number | undefined; bytes?: number | undefined; grep?: string | undefined }) {
      return tailLogFile(requireDir(), name, q);
    },
    /** A person's DELETE: synchronous, recorded whether it worked or not. */
    async cleanup(ctx: RequestContext, name: string, mode: CleanupMode) {
      const d = requireDir();
      const actor: Actor = { actor: `key:${ctx.principal.keyPrefix}`, actorPrefix: "manual" };
      try {
        const done = await cleanupLogFile(d, name, mode);
        return record(deps.sql, ctx.principal.tenantId, ctx.now, actor, { filename: name, mode, ...done, dry_run: false, result: "ok", error: null });
      } catch (err) {
        const code = err instanceof AppError ? err.code : "internal";
        await record(deps.sql, ctx.principal.tenantId, ctx.now, actor, {
          filename: name,
          mode,
          bytes_before: null,
          bytes_after: null,
          dry_run: false,
          result: "failed",
          error: code,
        });
        throw err;
      }
    },
    async auditList(tenantId: string, q: { cursor?: string | undefined; limit: number }) {
      const afterId = afterIdOf(q.cursor);
      return toPage(await listCleanupAudit(deps.sql, tenantId, { afterId, limit: q.limit }), q.limit, (r) => [r.id], toRecord);
    },
    async estimate(tenantId: string) {
      const d = requireDir();
      const policy = autoPolicyOf(await readTenantSettings(deps.sql, tenantId));
      return estimateAutoCleanup(d, policy.thresholdBytes);
    },
    /**
     * An automatic cleanup by the tenant's policy, from the API (`auto:api`) or the scheduler;
     * a maintenance policy's action may set its own threshold and mode (`override`).
     */
    async autoRun(tenantId: string, now: Date, actor: Actor, dryRun: boolean, override: Partial<Pick<AutoPolicy, "thresholdBytes" | "mode">> = {}) {
      const d = requireDir();
      const policy = { ...autoPolicyOf(await readTenantSettings(deps.sql, tenantId)), ...override };
      const run = await runAutoCleanup(d, { thresholdBytes: policy.thresholdBytes, mode: policy.mode, dryRun });
      for (const item of run.cleaned) {
        await record(deps.sql, tenantId, now, actor, {
          filename: item.name,
          mode: item.mode,
          bytes_before: item.bytes_before,
          bytes_after: item.bytes_after,
          dry_run: dryRun,
          result: item.result,
          error: item.error,
        });
      }
      return run;
    },
  };
}

export type RuntimeLogService = ReturnType<typeof createRuntimeLogService>;
