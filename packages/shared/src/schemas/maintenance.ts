import { z } from "zod";
import { listQuery, optionalFields, QueryBoolean, Timestamp, timestamps, Uuid } from "./common.js";
import { nameText } from "./text.js";

const Days = z.number().int().min(1).max(36500).describe("Age in days (1..36500): older records are deleted.");

export const MaintenanceAction = z
  .discriminatedUnion("type", [
    z
      .strictObject({ type: z.literal("revision_prune") })
      .describe("Prune revisions by the tenant's `revision_retention_minutes` (never the current revision)."),
    z
      .strictObject({
        type: z.literal("runtime_logs_cleanup"),
        threshold_bytes: z.number().int().min(1).optional().describe("Default: the tenant's `runtime_logs_auto_threshold_bytes`."),
        mode: z.enum(["truncate", "delete"]).optional().describe("Default: the tenant's `runtime_logs_auto_mode`."),
      })
      .describe("Clean runtime-log files above the threshold (only where runtime logs are available: `APP_SERVICE=app-all`)."),
    z
      .strictObject({ type: z.literal("audit_retention"), days: Days })
      .describe("Delete CRUD audit records older than `days` (never one still waiting to be pushed)."),
    z
      .strictObject({ type: z.literal("jobs_retention"), days: Days })
      .describe("Delete finished jobs (succeeded, failed, cancelled) that ended more than `days` ago."),
  ])
  .meta({ id: "MaintenanceAction" });
export type MaintenanceAction = z.infer<typeof MaintenanceAction>;

const Actions = z
  .array(MaintenanceAction)
  .min(1)
  .max(4)
  .refine((list) => new Set(list.map((a) => a.type)).size === list.length, "each action type may appear once")
  .describe("Run in this order; each type at most once.");

const policyFields = {
  name: nameText(128).describe("Unique in the tenant, 1..128 characters.").meta({ example: "nightly" }),
  enabled: z.boolean(),
  interval_minutes: z.number().int().min(5).max(43200).describe("How often the scheduler runs the policy, 5..43200 minutes."),
  actions: Actions,
};

export const MaintenancePolicy = z
  .object({
    policy_id: Uuid,
    name: z.string(),
    enabled: z.boolean(),
    interval_minutes: z.number().int(),
    actions: z.array(MaintenanceAction),
    last_run_at: Timestamp.nullable().describe("When a run last finished."),
    next_run_at: Timestamp.nullable().describe("When the scheduler runs it next; null while disabled."),
    ...timestamps,
  })
  .meta({ id: "MaintenancePolicy" });
export type MaintenancePolicy = z.infer<typeof MaintenancePolicy>;

export const CreateMaintenancePolicyBody = z.strictObject({ ...policyFields, enabled: policyFields.enabled.default(true) });
export type CreateMaintenancePolicyBody = z.infer<typeof CreateMaintenancePolicyBody>;

export const UpdateMaintenancePolicyBody = z.strictObject(optionalFields(policyFields));
export type UpdateMaintenancePolicyBody = z.infer<typeof UpdateMaintenancePolicyBody>;

export const MaintenancePolicyListQuery = listQuery({ enabled: QueryBoolean.optional() });
export const MaintenancePolicyParams = z.strictObject({ policy_id: Uuid });

export const MaintenanceDryRun = z
  .object({
    policy_id: Uuid,
    actions: z.array(
      z.object({
        type: z.enum(["revision_prune", "runtime_logs_cleanup", "audit_retention", "jobs_retention"]),
        would: z
          .record(z.string(), z.unknown())
          .describe(
            "What the action would delete: `count` always; `revision_ids` (revision_prune), `files` and `bytes` (runtime_logs_cleanup; " +
              "`available: false` where runtime logs are not available), `cutoff` and the first 100 `ids` with `truncated` (audit and jobs retention).",
          ),
      }),
    ),
  })
  .meta({ id: "MaintenanceDryRun" });
export type MaintenanceDryRun = z.infer<typeof MaintenanceDryRun>;

export const DatabaseStatus = z
  .object({
    collected_at: Timestamp,
    database: z.object({ name: z.string(), size_bytes: z.number(), server_version: z.string() }),
    tables: z.array(
      z.object({
        schema: z.string(),
        name: z.string(),
        size_bytes: z.number().describe("Table, indexes and TOAST."),
        row_estimate: z.number().describe("From the planner's statistics (ANALYZE), else the statistics collector."),
        dead_tuples: z.number().nullable().describe("null where the statistics collector has nothing for the table."),
        last_vacuum_at: Timestamp.nullable(),
        last_analyze_at: Timestamp.nullable(),
      }),
    ),
    connections: z.object({
      total: z.number().int(),
      active: z.number().int(),
      idle: z.number().int(),
      idle_in_transaction: z.number().int(),
      max: z.number().int().nullable(),
    }),
  })
  .meta({ id: "DatabaseStatus" });
export type DatabaseStatus = z.infer<typeof DatabaseStatus>;

export const AnalyzeResult = z.object({ analyzed_at: Timestamp, duration_ms: z.number().int() }).meta({ id: "AnalyzeResult" });
