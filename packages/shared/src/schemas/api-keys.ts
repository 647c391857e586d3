import { z } from "zod";
import { AnyRole, listQuery, optionalBody, Role, Timestamp, Uuid } from "./common.js";

export const ApiKey = z
  .object({
    id: Uuid,
    name: z.string(),
    role: AnyRole,
    key_prefix: z.string(),
    tenant_id: Uuid,
    created_at: Timestamp,
    updated_at: Timestamp,
    expires_at: Timestamp.nullable(),
    last_used_at: Timestamp.nullable(),
    revoked_at: Timestamp.nullable(),
    speaker_id: Uuid.nullable(),
  })
  .meta({ id: "ApiKey" });

export const ApiKeyWithSecret = ApiKey.extend({
  secret: z.string().describe("`rlk_<key_prefix>_<secret>`: shown once, only in this answer."),
}).meta({ id: "ApiKeyWithSecret" });

export const RotatedApiKey = ApiKey.extend({
  secret: z.string().describe("The rotated key's new secret, shown once."),
}).meta({ id: "RotatedApiKey" });

const KeyName = z.string().trim().min(1).max(128);
const ExpiresAt = z.iso.datetime({ offset: true }).nullable();

export const CreateApiKeyBody = z.strictObject({
  name: KeyName,
  role: Role,
  expires_at: ExpiresAt.optional(),
});

export const UpdateApiKeyBody = z.strictObject({
  name: KeyName.optional(),
  role: Role.optional(),
  expires_at: ExpiresAt.optional(),
});

export const RotateApiKeyBody = optionalBody(
  z.strictObject({
    grace_seconds: z.number().int().min(0).max(86400).optional(),
  }),
);

export const ApiKeyListQuery = listQuery({
  role: AnyRole.optional(),
});

export const Session = z
  .object({
    tenant_id: Uuid,
    tenant_name: z.string(),
    role: AnyRole,
    key_id: Uuid,
    key_prefix: z.string(),
    permissions: z.array(z.string()),
  })
  .meta({ id: "Session" });

export type ApiKey = z.infer<typeof ApiKey>;
export type CreateApiKeyBody = z.infer<typeof CreateApiKeyBody>;
export type UpdateApiKeyBody = z.infer<typeof UpdateApiKeyBody>;
export type RotatedApiKey = z.infer<typeof RotatedApiKey>;
