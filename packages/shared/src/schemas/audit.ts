import { z } from "zod";
import { AnyRole, listQuery, Timestamp, Uuid } from "./common.js";

export const AuditAction = z.enum(["create", "update", "delete", "rotate", "revoke", "apply", "rollback", "run", "cancel"]);
export const AuditSeverity = z.enum(["info", "warning", "critical"]);
export const AuditResourceType = z.enum([
  "tenant",
  "api_key",
  "settings",
  "module",
  "as_entry",
  "domain_entry",
  "ip_range_entry",
  "country_entry",
  "cdn_source",
  "community",
  "doh_profile",
  "peer",
  "speaker",
  "revision",
  "job",
  "maintenance_policy",
  "signing_key",
  "nats_user",
]);

export const AuditRecord = z
  .object({
    id: Uuid,
    at: Timestamp,
    tenant_id: Uuid,
    actor: z.object({ key_id: Uuid.nullable(), key_prefix: z.string().nullable(), role: AnyRole.nullable() }),
    action: AuditAction,
    resource_type: AuditResourceType,
    resource_id: z.string().nullable(),
    severity: AuditSeverity,
    request_id: z.string().nullable(),
    summary: z.string(),
    changes: z.record(z.string(), z.object({ from: z.unknown(), to: z.unknown() })),
    policy_id: Uuid.nullable(),
  })
  .meta({ id: "AuditRecord" });

export const AuditListQuery = listQuery({
  action: AuditAction.optional(),
  severity: AuditSeverity.optional(),
  resource_type: AuditResourceType.optional(),
  since: z.iso.datetime({ offset: true }).optional(),
  until: z.iso.datetime({ offset: true }).optional(),
});

export type AuditAction = z.infer<typeof AuditAction>;
export type AuditSeverity = z.infer<typeof AuditSeverity>;
export type AuditResourceType = z.infer<typeof AuditResourceType>;
export type AuditRecord = z.infer<typeof AuditRecord>;
