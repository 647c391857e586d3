import type { AuditAction, AuditRecord, AuditResourceType, AuditSeverity } from "@rlc/shared/schemas";
import { type AuditFilter, type AuditRow, insertAuditRecord, listAuditRecords } from "../../db/audit.js";
import type { Db } from "../../db/connect.js";
import { type Page, toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { isoRequired } from "../../lib/time.js";
import type { RequestContext } from "./context.js";

export interface AuditEntry {
  action: AuditAction;
  resource_type: AuditResourceType;
  resource_id: string | null;
  summary: string;
  changes?: Record<string, { from: unknown; to: unknown }>;
  severity?: AuditSeverity;
  policy_id?: string | null;
}

/** Field names whose values never reach the journal: no secret is recorded. */
const SECRET_FIELDS = /secret|password|token|private|seed|api_key$/i;

export interface AuditWriter {
  /** Writes the record in the caller's transaction (and its push outbox row when push is on). */
  record(tx: Db, ctx: Pick<RequestContext, "principal" | "requestId" | "now" | "afterCommit">, entry: AuditEntry): Promise<string>;
  /** For work without a calling key (scheduler, bootstrap). */
  recordSystem(tx: Db, tenantId: string, now: Date, entry: AuditEntry & { actor?: string }): Promise<string>;
}

export function createAuditWriter(opts: { pushEnabled: boolean; onRecorded?: () => void }): AuditWriter {
  const write = async (tx: Db, row: AuditRow, afterCommit?: (fn: () => void) => void) => {
    await insertAuditRecord(tx, row, opts.pushEnabled);
    if (opts.pushEnabled && opts.onRecorded && afterCommit) afterCommit(opts.onRecorded);
    return row.id;
  };
  return {
    record(tx, ctx, entry) {
      return write(
        tx,
        {
          id: uuidv7(),
          tenant_id: ctx.principal.tenantId,
          at: ctx.now,
          actor_key_id: ctx.principal.keyId,
          actor_key_prefix: ctx.principal.keyPrefix,
          actor_role: ctx.principal.role,
          action: entry.action,
          resource_type: entry.resource_type,
          resource_id: entry.resource_id,
          severity: entry.severity ?? severityOf(entry.action),
          request_id: ctx.requestId,
          summary: entry.summary,
          changes: redact(entry.changes ?? {}),
          policy_id: entry.policy_id ?? null,
        },
        ctx.afterCommit,
      );
    },
    recordSystem(tx, tenantId, now, entry) {
      return write(tx, {
        id: uuidv7(),
        tenant_id: tenantId,
        at: now,
        actor_key_id: null,
        actor_key_prefix: entry.actor ?? null,
        actor_role: null,
        action: entry.action,
        resource_type: entry.resource_type,
        resource_id: entry.resource_id,
        severity: entry.severity ?? severityOf(entry.action),
        request_id: null,
        summary: entry.summary,
        changes: redact(entry.changes ?? {}),
        policy_id: entry.policy_id ?? null,
      });
    },
  };
}

function severityOf(action: AuditAction): AuditSeverity {
  if (action === "delete" || action === "revoke" || action === "rollback") return "warning";
  return "info";
}

function redact(changes: Record<string, { from: unknown; to: unknown }>): Record<string, { from: unknown; to: unknown }> {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const [field, change] of Object.entries(changes)) {
    out[field] = SECRET_FIELDS.test(field) ? { from: "[redacted]", to: "[redacted]" } : change;
  }
  return out;
}

/** `{field: {from, to}}` for the fields whose values differ (compared as JSON). */
export function changesOf<T extends Record<string, unknown>>(before: T | null, after: T | null, fields: readonly (keyof T & string)[]) {
  const out: Record<string, { from: unknown; to: unknown }> = {};
  for (const f of fields) {
    const from = before ? (before[f] ?? null) : null;
    const to = after ? (after[f] ?? null) : null;
    if (JSON.stringify(from) !== JSON.stringify(to)) out[f] = { from, to };
  }
  return out;
}

export function toAuditRecord(row: AuditRow): AuditRecord {
  return {
    id: row.id,
    at: isoRequired(row.at),
    tenant_id: row.tenant_id,
    actor: { key_id: row.actor_key_id, key_prefix: row.actor_key_prefix, role: row.actor_role as AuditRecord["actor"]["role"] },
    action: row.action as AuditRecord["action"],
    resource_type: row.resource_type as AuditRecord["resource_type"],
    resource_id: row.resource_id,
    severity: row.severity as AuditRecord["severity"],
    request_id: row.request_id,
    summary: row.summary,
    changes: row.changes,
    policy_id: row.policy_id,
  };
}

/** The journal as `GET /v1/audit` reads it: the calling key's tenant, keyset-paginated. */
export function createAuditLog(deps: { sql: Db }) {
  return {
    async list(ctx: Pick<RequestContext, "principal">, q: Omit<AuditFilter, "afterId"> & { cursor?: string | undefined }): Promise<Page<AuditRecord>> {
      const afterId = afterIdOf(q.cursor);
      const rows = await listAuditRecords(deps.sql, ctx.principal.tenantId, { ...q, afterId });
      return toPage(rows, q.limit, (r) => [r.id], toAuditRecord);
    },
  };
}

export type AuditLog = ReturnType<typeof createAuditLog>;
