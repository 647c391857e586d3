import { z } from "zod";
import { ApiKeyWithSecret } from "./api-keys.js";
import { Timestamp, Uuid } from "./common.js";

export const TenantName = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "must match ^[a-z0-9][a-z0-9-]{0,62}$");

export const Tenant = z.object({ tenant_id: Uuid, name: z.string(), created_at: Timestamp }).meta({ id: "Tenant" });

export const CreateTenantBody = z.strictObject({ name: TenantName });

export const CreatedTenant = Tenant.extend({ admin_key: ApiKeyWithSecret }).meta({ id: "CreatedTenant" });

export const TenantParams = z.strictObject({ id: Uuid });
