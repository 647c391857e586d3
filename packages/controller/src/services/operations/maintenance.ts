import { AppError, ConflictError, ForbiddenError, NotFoundError } from "@rlc/shared/errors";
import {
  type CreateMaintenancePolicyBody,
  type MaintenanceAction,
  type MaintenanceDryRun,
  type MaintenancePolicy,
  type UpdateMaintenancePolicyBody,
  Uuid,
} from "@rlc/shared/schemas";
import type { Db, Sql } from "../../db/connect.js";
import { deleteFinishedJobsBefore, type JobRow } from "../../db/jobs.js";
import {
  countAuditRecordsBefore,
  countFinishedJobsBefore,
  deleteAuditRecordsBefore,
  deleteMaintenancePolicy,
  findMaintenancePolicyById,
  findMaintenancePolicyByName,
  insertMaintenancePolicy,
  listMaintenancePolicies,
  type MaintenancePolicyRow,
  markMaintenancePolicyRun,
  updateMaintenancePolicy,
} from "../../db/maintenance.js";
import { isUniqueViolation } from "../../db/pg-errors.js";
import { findTenantById } from "../../db/tenants.js";
import { type Page, toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { iso, isoRequired } from "../../lib/time.js";
import { type AuditEntry, type AuditWriter, changesOf } from "../access/audit.js";
import { DEPLOYMENT_TENANT, inDeploymentTenant, type RequestContext, roleAtLeast } from "../access/context.js";
import { databaseMaintenance } from "./database-status.js";
import type { JobContext } from "./job-context.js";
import type { JobQueue } from "./jobs.js";
import { maintenanceScheduling, type PolicyRunParams, type RevisionPruning } from "./maintenance-schedule.js";
import type { Actor, AutoPolicy, RuntimeLogService } from "./runtime-logs.js";

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

export function toMaintenancePolicy(row: MaintenancePolicyRow): MaintenancePolicy {
  return {
    policy_id: row.id,
    name: row.name,
    enabled: row.enabled,
    interval_minutes: row.interval_minutes,
    actions: row.actions,
    last_run_at: iso(row.last_run_at),
    next_run_at: iso(row.next_run_at),
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

const FIELDS = ["name", "enabled", "interval_minutes", "actions"] as const;
const view = (r: MaintenancePolicyRow) => ({ name: r.name, enabled: r.enabled, interval_minutes: r.interval_minutes, actions: r.actions });
const taken = (name: string) => new ConflictError(`a maintenance policy named "${name}" already exists`);
const daysBefore = (now: Date, days: number) => new Date(now.getTime() - days * DAY);

/** How the audit summary of each change to a policy says what happened. */
const DONE = { create: "created", update: "updated", delete: "deleted" } as const;

/** The two retention actions: what each counts and deletes, and how a deletion is recorded. */
const RETENTION = {
  // There is no resource type for audit records: their deletion is recorded on the policy.
  audit_retention: {
    count: countAuditRecordsBefore,
    remove: deleteAuditRecordsBefore,
    resourceType: "maintenance_policy",
    field: "audit_records",
    deleted: (count: number, cutoff: string) => `audit retention: deleted ${count} audit record(s) from before ${cutoff}`,
  },
  jobs_retention: {
    count: countFinishedJobsBefore,
    remove: deleteFinishedJobsBefore,
    resourceType: "job",
    field: "jobs",
    deleted: (count: number, cutoff: string) => `jobs retention: deleted ${count} finished job(s) that ended before ${cutoff}`,
  },
} as const;

/**
 * An audit trail kept for fewer days than this is one an operator could use to erase their own
 * tracks (the run is audited, but the records before it are gone): shorter ones are an admin's call.
 */
export const AUDIT_RETENTION_FLOOR_DAYS = 30;

/**
 * What the key may put in a policy: runtime logs belong to the deployment, so a policy that
 * cleans them is written in its tenant only; an audit retention below the floor needs an admin.
 */
function mayWrite(ctx: RequestContext, actions: readonly MaintenanceAction[] | undefined) {
  if (actions?.some((a) => a.type === "runtime_logs_cleanup") && !inDeploymentTenant(ctx.principal)) {
    throw new ForbiddenError(`runtime_logs_cleanup acts on the whole deployment: only keys of tenant "${DEPLOYMENT_TENANT}" may schedule it`);
  }
  const short = actions?.find((a) => a.type === "audit_retention" && a.days < AUDIT_RETENTION_FLOOR_DAYS);
  if (short && !roleAtLeast(ctx.principal.role, "admin")) {
    throw new ForbiddenError(
      `an audit_retention shorter than ${AUDIT_RETENTION_FLOOR_DAYS} days deletes the audit trail of recent changes: it needs the admin role or higher; the key is ${ctx.principal.role}`,
    );
  }
}

type RecordAs = (tx: Db, now: Date, entry: AuditEntry) => Promise<unknown>;

export function createMaintenanceService(deps: {
  sql: Sql;
  queue: Pick<JobQueue, "enqueue">;
  audit: AuditWriter;
  revisions: RevisionPruning;
  runtimeLogs: RuntimeLogService;
}) {
  const { audit } = deps;
  const mustFind = async (db: Db, tenantId: string, id: string, forUpdate = false) => {
    const row = await findMaintenancePolicyById(db, tenantId, id, forUpdate);
    if (!row) throw new NotFoundError("maintenance policy", id);
    return row;
  };
  /** Audits a change to a policy itself, recorded on the policy and naming it. */
  const recordChange = (tx: Db, ctx: RequestContext, action: keyof typeof DONE, policy: MaintenancePolicyRow, changes: AuditEntry["changes"]) =>
    audit.record(tx, ctx, {
      action,
      resource_type: "maintenance_policy",
      resource_id: policy.id,
      policy_id: policy.id,
      summary: `maintenance policy "${policy.name}" ${DONE[action]}`,
      changes,
    });

  /** Runtime logs are files: the action runs outside any transaction and keeps its own cleanup audit. */
  const cleanLogs = async (
    tenantId: string,
    now: Date,
    actor: Actor,
    action: Extract<MaintenanceAction, { type: "runtime_logs_cleanup" }>,
    dryRun: boolean,
  ) => {
    // The log files are the deployment's: a policy of any other tenant finds them unavailable.
    if (!deps.runtimeLogs.available || (await findTenantById(deps.sql, tenantId))?.name !== DEPLOYMENT_TENANT) {
      return { available: false, count: 0, files: [], bytes: 0 };
    }
    const override: Partial<Pick<AutoPolicy, "thresholdBytes" | "mode">> = {};
    if (action.threshold_bytes !== undefined) override.thresholdBytes = action.threshold_bytes;
    if (action.mode !== undefined) override.mode = action.mode;
    try {
      const run = await deps.runtimeLogs.autoRun(tenantId, now, actor, dryRun, override);
      return { available: true, count: run.cleaned.length, files: run.cleaned, bytes: run.freed_bytes };
    } catch (err) {
      // A directory gone missing must not stop the policy's other actions.
      return { available: true, count: 0, files: [], bytes: 0, error: err instanceof AppError ? err.code : "internal" };
    }
  };

  /** What one action would delete now; reads only (the runtime-log dry run records itself, as every dry run does). */
  const would = async (tenantId: string, now: Date, actor: Actor, action: MaintenanceAction): Promise<Record<string, unknown>> => {
    switch (action.type) {
      case "revision_prune": {
        const est = await deps.revisions.pruneEstimate(deps.sql, tenantId, now);
        return {
          count: est.candidate_count,
          revision_ids: est.candidate_revision_ids,
          kept_count: est.kept_count,
          retention_minutes: est.retention_minutes,
          cutoff: est.cutoff,
        };
      }
      case "runtime_logs_cleanup":
        return cleanLogs(tenantId, now, actor, action, true);
      case "audit_retention":
      case "jobs_retention": {
        const cutoff = daysBefore(now, action.days);
        const found = await RETENTION[action.type].count(deps.sql, tenantId, cutoff);
        return { count: found.count, cutoff: cutoff.toISOString(), ids: found.ids, truncated: found.count > found.ids.length };
      }
    }
  };

  /** Runs one database action in the run's transaction; each deletion is audited with the policy's id. */
  const apply = async (
    tx: Db,
    tenantId: string,
    now: Date,
    policyId: string,
    recordAs: RecordAs,
    action: Exclude<MaintenanceAction, { type: "runtime_logs_cleanup" }>,
  ) => {
    const record = (entry: AuditEntry) => recordAs(tx, now, { ...entry, policy_id: policyId });
    switch (action.type) {
      case "revision_prune": {
        const r = await deps.revisions.pruneWith(tx, tenantId, now, false, record);
        return { count: r.deleted_count, revision_ids: r.deleted_revision_ids, kept_count: r.kept_count };
      }
      case "audit_retention":
      case "jobs_retention": {
        const retention = RETENTION[action.type];
        const cutoff = daysBefore(now, action.days);
        const count = await retention.remove(tx, tenantId, cutoff);
        if (count) {
          await record({
            action: "delete",
            resource_type: retention.resourceType,
            resource_id: retention.resourceType === "maintenance_policy" ? policyId : null,
            summary: retention.deleted(count, cutoff.toISOString()),
            changes: { [retention.field]: { from: count, to: 0 } },
          });
        }
        return { count, cutoff: cutoff.toISOString() };
      }
    }
  };

  return {
    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number; enabled?: boolean | undefined }): Promise<Page<MaintenancePolicy>> {
      const rows = await listMaintenancePolicies(deps.sql, ctx.principal.tenantId, { afterId: afterIdOf(q.cursor), limit: q.limit, enabled: q.enabled });
      return toPage(rows, q.limit, (r) => [r.id], toMaintenancePolicy);
    },

    async get(ctx: RequestContext, id: string) {
      return toMaintenancePolicy(await mustFind(deps.sql, ctx.principal.tenantId, id));
    },

    /** An enabled policy first runs one interval after it is created. */
    async create(tx: Db, ctx: RequestContext, body: CreateMaintenancePolicyBody) {
      const tenantId = ctx.principal.tenantId;
      mayWrite(ctx, body.actions);
      if (await findMaintenancePolicyByName(tx, tenantId, body.name)) throw taken(body.name);
      const row: MaintenancePolicyRow = {
        id: uuidv7(),
        tenant_id: tenantId,
        name: body.name,
        enabled: body.enabled,
        interval_minutes: body.interval_minutes,
        actions: body.actions,
        last_run_at: null,
        next_run_at: body.enabled ? new Date(ctx.now.getTime() + body.interval_minutes * MINUTE) : null,
        created_at: ctx.now,
        updated_at: ctx.now,
      };
      try {
        await insertMaintenancePolicy(tx, row);
      } catch (err) {
        throw isUniqueViolation(err) ? taken(body.name) : err;
      }
      await recordChange(tx, ctx, "create", row, changesOf(null, view(row), FIELDS));
      return toMaintenancePolicy(row);
    },

    /** Enabling a policy or changing its interval starts the countdown afresh; disabling clears it. */
    async update(tx: Db, ctx: RequestContext, id: string, body: UpdateMaintenancePolicyBody) {
      const tenantId = ctx.principal.tenantId;
      mayWrite(ctx, body.actions);
      const before = await mustFind(tx, tenantId, id, true);
      const name = body.name ?? before.name;
      if (name !== before.name && (await findMaintenancePolicyByName(tx, tenantId, name))) throw taken(name);
      const enabled = body.enabled ?? before.enabled;
      const interval = body.interval_minutes ?? before.interval_minutes;
      const restart = enabled && (!before.enabled || interval !== before.interval_minutes);
      const nextRunAt = !enabled ? null : restart ? new Date(ctx.now.getTime() + interval * MINUTE) : before.next_run_at;
      let after: MaintenancePolicyRow;
      try {
        after = await updateMaintenancePolicy(tx, tenantId, id, {
          name,
          enabled,
          interval_minutes: interval,
          actions: body.actions ?? before.actions,
          next_run_at: nextRunAt,
          updated_at: ctx.now,
        });
      } catch (err) {
        throw isUniqueViolation(err) ? taken(name) : err;
      }
      const changes = changesOf(view(before), view(after), FIELDS);
      if (Object.keys(changes).length) await recordChange(tx, ctx, "update", after, changes);
      return toMaintenancePolicy(after);
    },

    /** Deletes the policy; a run already queued fails with `not_found` when its turn comes. */
    async remove(tx: Db, ctx: RequestContext, id: string) {
      const before = await mustFind(tx, ctx.principal.tenantId, id, true);
      await deleteMaintenancePolicy(tx, ctx.principal.tenantId, id);
      await recordChange(tx, ctx, "delete", before, changesOf(view(before), null, FIELDS));
    },

    /** `POST …/run`: a `maintenance_policy_run` job in the caller's transaction. */
    async requestRun(tx: Db, ctx: RequestContext, id: string): Promise<JobRow> {
      const p = ctx.principal;
      await mustFind(tx, p.tenantId, id);
      const params: PolicyRunParams = {
        policy_id: id,
        trigger: "api",
        requested_by: { key_id: p.keyId, key_prefix: p.keyPrefix, role: p.role },
        request_id: ctx.requestId,
      };
      return deps.queue.enqueue(tx, {
        tenantId: p.tenantId,
        type: "maintenance_policy_run",
        params: params as unknown as Record<string, unknown>,
        createdBy: `key:${p.keyPrefix}`,
        now: ctx.now,
        afterCommit: ctx.afterCommit,
      });
    },

    /** `POST …/dry-run`: what each action would delete now; nothing is deleted. */
    async dryRun(ctx: RequestContext, id: string): Promise<MaintenanceDryRun> {
      const tenantId = ctx.principal.tenantId;
      const policy = await mustFind(deps.sql, tenantId, id);
      const actor: Actor = { actor: `policy:${id}`, actorPrefix: "auto:api" };
      const actions: MaintenanceDryRun["actions"] = [];
      for (const action of policy.actions) actions.push({ type: action.type, would: await would(tenantId, ctx.now, actor, action) });
      return { policy_id: id, actions };
    },

    /**
     * The `maintenance_policy_run` job. Runtime-log files are cleaned first (a file cannot join
     * a transaction); every database action, the audit records of what they deleted, the run's
     * own record and `last_run_at` then commit together with the job's end. The run's records
     * are written after the audit retention deleted, so it never deletes them.
     */
    async runPolicy(job: Pick<JobContext, "job" | "now" | "checkpoint" | "complete">) {
      const started = Date.now();
      const tenantId = job.job.tenant_id;
      const params = job.job.params as unknown as PolicyRunParams;
      if (!Uuid.safeParse(params.policy_id).success) {
        throw new AppError("validation_failed", "the job's params name no policy_id");
      }
      const policy = await mustFind(deps.sql, tenantId, params.policy_id);
      if (params.trigger === "scheduler" && !policy.enabled) return { policy_id: policy.id, trigger: params.trigger, skipped: "the policy was disabled" };

      const after: (() => void | Promise<void>)[] = [];
      const recordAs: RecordAs = (tx, now, entry) => {
        const by = params.requested_by;
        if (!by) return audit.recordSystem(tx, tenantId, now, { ...entry, actor: "auto:scheduler" });
        const principal = { tenantId, tenantName: "", role: by.role, keyId: by.key_id, keyPrefix: by.key_prefix, speakerId: null };
        return audit.record(tx, { principal, requestId: params.request_id, now, afterCommit: (fn) => void after.push(fn) }, entry);
      };
      const actor: Actor = { actor: `policy:${policy.id}`, actorPrefix: params.trigger === "scheduler" ? "auto:scheduler" : "auto:api" };
      const results: { type: MaintenanceAction["type"]; done: Record<string, unknown> }[] = policy.actions.map((a) => ({ type: a.type, done: {} }));
      for (const [i, action] of policy.actions.entries()) {
        if (action.type !== "runtime_logs_cleanup") continue;
        await job.checkpoint();
        results[i]!.done = await cleanLogs(tenantId, job.now(), actor, action, false);
      }
      await job.checkpoint();

      const result = await job.complete(async (tx) => {
        const now = job.now();
        for (const [i, action] of policy.actions.entries()) {
          if (action.type !== "runtime_logs_cleanup") results[i]!.done = await apply(tx, tenantId, now, policy.id, recordAs, action);
        }
        if (!(await markMaintenancePolicyRun(tx, tenantId, policy.id, now))) throw new NotFoundError("maintenance policy", policy.id);
        await recordAs(tx, now, {
          action: "run",
          resource_type: "maintenance_policy",
          resource_id: policy.id,
          policy_id: policy.id,
          summary: `maintenance policy "${policy.name}" ran (${params.trigger}): ${results.map((r) => `${r.type} ${r.done.available === false ? "unavailable" : `${r.done.count ?? 0}`}`).join(", ")}`,
          changes: { last_run_at: { from: iso(policy.last_run_at), to: now.toISOString() } },
        });
        return { policy_id: policy.id, trigger: params.trigger, actions: results, duration_ms: Date.now() - started };
      });
      for (const fn of after) await Promise.resolve(fn()).catch(() => {});
      return result;
    },

    ...maintenanceScheduling({ sql: deps.sql, revisions: deps.revisions, audit }),
    ...databaseMaintenance(deps.sql),
  };
}

export type MaintenanceService = ReturnType<typeof createMaintenanceService>;
