import { AppError, type FieldError, ForbiddenError, ValidationError } from "@rlc/shared/errors";
import { knownSettings } from "@rlc/shared/schemas";
import type { Db } from "../../db/connect.js";
import { ensureSettingsRow, findSettings, type SettingsRow, upsertSettings } from "../../db/settings.js";
import { iso } from "../../lib/time.js";
import type { AuditWriter } from "../access/audit.js";
import { DEPLOYMENT_TENANT, inDeploymentTenant, type RequestContext } from "../access/context.js";

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** RFC 7396 JSON merge patch: null deletes, objects merge recursively, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** Validates the known keys of a whole settings object; unknown keys pass as they are. */
export function validateSettings(settings: Record<string, unknown>): Record<string, unknown> {
  const errors: FieldError[] = [];
  const out: Record<string, unknown> = { ...settings };
  for (const [key, schema] of Object.entries(knownSettings)) {
    if (!(key in settings)) continue;
    const parsed = schema.safeParse(settings[key]);
    if (parsed.success) out[key] = parsed.data;
    else for (const issue of parsed.error.issues) errors.push({ path: ["body", key, ...issue.path].join("."), message: issue.message });
  }
  if (errors.length) throw new ValidationError(`invalid settings: ${errors.map((e) => `${e.path}: ${e.message}`).join("; ")}`, errors);
  return out;
}

/**
 * Settings that act on the deployment rather than the tenant: the automatic cleanup of the
 * controller host's runtime logs. Only keys of the deployment's tenant may set them (with the
 * route's role, operator+, as SPEC.md gives the runtime-log routes).
 */
export const isDeploymentSetting = (key: string) => key.startsWith("runtime_logs_auto_");

/**
 * The whole document, serialized as JSON, and the part of it in keys the controller does not
 * know: every render and ingest reads the document, and unknown keys (and unknown members of
 * `BIRD`) are kept as given, so only a cap bounds what merge patches pile up.
 */
export const SETTINGS_MAX_BYTES = 1024 * 1024;
export const SETTINGS_UNKNOWN_MAX_BYTES = 64 * 1024;

function sizesOf(settings: Record<string, unknown>) {
  const unknown = Object.fromEntries(Object.entries(settings).filter(([key]) => !(key in knownSettings)));
  return { size: Buffer.byteLength(JSON.stringify(settings)), unknownSize: Buffer.byteLength(JSON.stringify(unknown)) };
}

/** A patch may not take the document past a cap; one kept from before the caps may still shrink. */
function assertWithinCap(before: Record<string, unknown>, after: Record<string, unknown>) {
  const was = sizesOf(before);
  const { size, unknownSize } = sizesOf(after);
  if ((size > SETTINGS_MAX_BYTES && size > was.size) || (unknownSize > SETTINGS_UNKNOWN_MAX_BYTES && unknownSize > was.unknownSize)) {
    throw new AppError(
      "payload_too_large",
      `the settings would take ${size} bytes as JSON, ${unknownSize} of them in keys the controller does not know; ` +
        `the caps are ${SETTINGS_MAX_BYTES} bytes in all and ${SETTINGS_UNKNOWN_MAX_BYTES} for unknown keys (nothing was changed)`,
      { extra: { size_bytes: size, unknown_keys_bytes: unknownSize, max_bytes: SETTINGS_MAX_BYTES, max_unknown_keys_bytes: SETTINGS_UNKNOWN_MAX_BYTES } },
    );
  }
}

const toSettings = (row: SettingsRow) => ({ settings: row.settings, updated_at: iso(row.updated_at) });

/** `sql` serves the reads; a patch runs in the caller's transaction. */
export function createSettingsService(deps: { audit: AuditWriter; sql: Db }) {
  return {
    async get(ctx: Pick<RequestContext, "principal">) {
      return toSettings(await findSettings(deps.sql, ctx.principal.tenantId));
    },
    async patch(tx: Db, ctx: RequestContext, patch: Record<string, unknown>) {
      const deploymentKeys = Object.keys(patch).filter(isDeploymentSetting);
      if (deploymentKeys.length && !inDeploymentTenant(ctx.principal)) {
        throw new ForbiddenError(`${deploymentKeys.join(", ")} act on the whole deployment: only keys of tenant "${DEPLOYMENT_TENANT}" may set them`);
      }
      await ensureSettingsRow(tx, ctx.principal.tenantId);
      const before = await findSettings(tx, ctx.principal.tenantId, true);
      const merged = validateSettings(mergePatch(before.settings, patch) as Record<string, unknown>);
      assertWithinCap(before.settings, merged);
      const after = await upsertSettings(tx, ctx.principal.tenantId, merged, ctx.now);
      const changes: Record<string, { from: unknown; to: unknown }> = {};
      for (const key of new Set([...Object.keys(before.settings), ...Object.keys(merged)])) {
        const from = before.settings[key] ?? null;
        const to = merged[key] ?? null;
        if (JSON.stringify(from) !== JSON.stringify(to)) changes[key] = { from, to };
      }
      await deps.audit.record(tx, ctx, {
        action: "update",
        resource_type: "settings",
        resource_id: ctx.principal.tenantId,
        summary: `settings updated: ${Object.keys(changes).join(", ") || "no change"}`,
        changes,
      });
      return toSettings(after);
    },
  };
}

/** Reads a tenant's settings for other services (ingest, render) without a request. */
export async function readTenantSettings(db: Db, tenantId: string): Promise<Record<string, unknown>> {
  return (await findSettings(db, tenantId)).settings;
}
