import { ConflictError, NotFoundError } from "@rlc/shared/errors";
import { ADVISORY_LOCKS, lockForTransaction } from "../../db/advisory-locks.js";
import type { Db, Sql } from "../../db/connect.js";
import { countTenants, findTenantById, findTenantByName, insertTenant, listTenants, type TenantRow } from "../../db/tenants.js";
import { toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { isoRequired } from "../../lib/time.js";
import { mintApiKey, toApiKey } from "./api-keys.js";
import type { AuditWriter } from "./audit.js";
import type { RequestContext, RoleName } from "./context.js";

export const toTenant = (row: TenantRow) => ({ tenant_id: row.id, name: row.name, created_at: isoRequired(row.created_at) });

/** Creates a tenant with its first key; the caller audits. 409 when the name is taken. */
export async function createTenantWithKey(tx: Db, name: string, role: RoleName, now: Date) {
  if (await findTenantByName(tx, name)) throw new ConflictError(`tenant name ${name} is taken`);
  const tenant: TenantRow = { id: uuidv7(), name, created_at: now };
  await insertTenant(tx, tenant);
  const key = await mintApiKey(tx, { tenantId: tenant.id, name: `${name} ${role}`, role, now });
  return { tenant, key };
}

export interface BootstrapResult {
  created: boolean;
  tenant_id?: string;
  secret?: string;
  key_prefix?: string;
}

/**
 * On an empty database: tenant `default` and one superadmin key, from BOOTSTRAP_API_KEY when
 * given. Runs under the migration lock so two controllers starting together make one tenant.
 */
export async function bootstrapDefaultTenant(sql: Sql, opts: { bootstrapKey?: string | undefined; now: Date }): Promise<BootstrapResult> {
  return sql.begin(async (tx) => {
    await lockForTransaction(tx, ADVISORY_LOCKS.migration);
    if ((await countTenants(tx)) > 0) return { created: false };
    const tenant: TenantRow = { id: uuidv7(), name: "default", created_at: opts.now };
    await insertTenant(tx, tenant);
    const { row, secret } = await mintApiKey(tx, {
      tenantId: tenant.id,
      name: "bootstrap",
      role: "superadmin",
      now: opts.now,
      ...(opts.bootstrapKey ? { secret: opts.bootstrapKey } : {}),
    });
    return { created: true, tenant_id: tenant.id, secret, key_prefix: row.key_prefix };
  });
}

export function createTenantService(deps: { sql: Db; audit: AuditWriter }) {
  return {
    async create(tx: Db, ctx: RequestContext, body: { name: string }) {
      const { tenant, key } = await createTenantWithKey(tx, body.name, "admin", ctx.now);
      await deps.audit.record(tx, ctx, {
        action: "create",
        resource_type: "tenant",
        resource_id: tenant.id,
        summary: `tenant ${tenant.name} created with admin key ${key.row.key_prefix}`,
        changes: { name: { from: null, to: tenant.name } },
      });
      return { ...toTenant(tenant), admin_key: { ...toApiKey(key.row), secret: key.secret } };
    },
    async list(q: { cursor?: string | undefined; limit: number }) {
      const afterId = afterIdOf(q.cursor);
      const rows = await listTenants(deps.sql, { afterId, limit: q.limit });
      return toPage(rows, q.limit, (r) => [r.id], toTenant);
    },
    async get(id: string) {
      const row = await findTenantById(deps.sql, id);
      if (!row) throw new NotFoundError("tenant", id);
      return toTenant(row);
    },
  };
}
