import { z } from "zod";
import { listQuery, queryFlag, Timestamp, Uuid } from "./common.js";

/** A log file is named by its base name only. Anything else is a 400, never a path. */
export const LogFileName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]*\.log$/, "must be a base name matching ^[a-z0-9][a-z0-9_.-]*\\.log$")
  .max(255);

export const LogFileInfo = z.object({ name: z.string(), size: z.number().int(), mtime: Timestamp }).meta({ id: "RuntimeLogFile" });

export const LogFileList = z
  .object({ items: z.array(LogFileInfo), next_cursor: z.null(), has_more: z.literal(false), total_bytes: z.number().int() })
  .meta({ id: "RuntimeLogFileList" });

export const LogFileParams = z.strictObject({ filename: LogFileName });

export const LogTailQuery = z.strictObject({
  lines: z.coerce.number().int().min(1).max(10000).optional().describe("Last lines to answer (default 200)."),
  bytes: z.coerce.number().int().min(1).max(8388608).optional().describe("Bytes read from the end at most (default 65536); the smaller tail wins."),
  grep: z.string().min(1).max(256).optional().describe("Literal substring (no regular expression), applied before `lines` counts."),
});

export const LogTail = LogFileInfo.extend({ lines: z.array(z.string()), truncated: z.boolean() }).meta({ id: "RuntimeLogTail" });

export const CleanupMode = z.enum(["truncate", "delete"]);
export const LogCleanupQuery = z.strictObject({ mode: CleanupMode.default("truncate") });

export const CleanupAuditRecord = z
  .object({
    id: Uuid,
    at: Timestamp,
    actor: z.string(),
    actor_prefix: z.string(),
    filename: z.string(),
    mode: CleanupMode,
    bytes_before: z.number().int().nullable(),
    bytes_after: z.number().int().nullable(),
    dry_run: z.boolean(),
    result: z.string(),
    error: z.string().nullable(),
  })
  .meta({ id: "RuntimeLogCleanupAuditRecord" });

export const CleanupAuditQuery = listQuery();

export const AutoEstimate = z
  .object({ threshold_bytes: z.number().int(), files: z.array(LogFileInfo), total_bytes: z.number().int() })
  .meta({ id: "RuntimeLogAutoEstimate" });

export const AutoRunQuery = z.strictObject({ dry_run: queryFlag() });

export const AutoRunResult = z
  .object({
    dry_run: z.boolean(),
    cleaned: z.array(
      z.object({
        name: z.string(),
        mode: CleanupMode,
        bytes_before: z.number().int(),
        bytes_after: z.number().int(),
        result: z.string(),
        error: z.string().nullable(),
      }),
    ),
    freed_bytes: z.number().int(),
  })
  .meta({ id: "RuntimeLogAutoRun" });
