import { ConflictError, ForbiddenError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import type { ApiKey, CreateApiKeyBody, RotatedApiKey, UpdateApiKeyBody } from "@rlc/shared/schemas";
import { type ApiKeyRow, findApiKeyById, insertApiKey, listApiKeys, revokeApiKey, rotateApiKeySecret, updateApiKey } from "../../db/api-keys.js";
import type { Db } from "../../db/connect.js";
import { type Page, toPage } from "../../lib/cursor.js";
import { afterIdOf } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { hashKeySecret, newKeyPrefix, newKeySecret, parseKeySecret } from "../../lib/key-secret.js";
import { iso, isoRequired } from "../../lib/time.js";
import { type AuditWriter, changesOf } from "./audit.js";
import { createAuthenticator } from "./authenticator.js";
import { type Principal, type RequestContext, type RoleName, roleAtLeast, roleRank } from "./context.js";

export function toApiKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    name: row.name,
    role: row.role as ApiKey["role"],
    key_prefix: row.key_prefix,
    tenant_id: row.tenant_id,
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
    expires_at: iso(row.expires_at),
    last_used_at: iso(row.last_used_at),
    revoked_at: iso(row.revoked_at),
    speaker_id: row.speaker_id,
  };
}

/** Inserts a key and returns its row and the one-time secret. No audit: callers record it. */
export async function mintApiKey(
  tx: Db,
  input: { tenantId: string; name: string; role: RoleName; now: Date; expiresAt?: Date | null; speakerId?: string | null; secret?: string },
): Promise<{ row: ApiKeyRow; secret: string }> {
  const prefix = input.secret ? parseKeySecret(input.secret)!.prefix : newKeyPrefix();
  const secret = input.secret ?? newKeySecret(prefix);
  const row: ApiKeyRow = {
    id: uuidv7(),
    tenant_id: input.tenantId,
    name: input.name,
    role: input.role,
    key_prefix: prefix,
    secret_hash: hashKeySecret(secret),
    previous_secret_hash: null,
    previous_valid_until: null,
    speaker_id: input.speakerId ?? null,
    expires_at: input.expiresAt ?? null,
    last_used_at: null,
    revoked_at: null,
    created_at: input.now,
    updated_at: input.now,
  };
  await insertApiKey(tx, row);
  return { row, secret };
}

/**
 * Resolves `Authorization: Bearer <key>` to a principal without caching (the gRPC service);
 * the one implementation of the check lives in authenticator.ts.
 */
export async function authenticate(db: Db, header: string | undefined, now: Date): Promise<Principal> {
  return createAuthenticator({ sql: db, ttlMs: 0 }).authenticate(header, now);
}

function assertCanGrant(caller: RoleName, role: RoleName) {
  if (roleRank(role) > roleRank(caller)) throw new ForbiddenError(`a ${caller} key cannot grant the ${role} role`);
}

/**
 * A key manages its own key and keys of a lower role; node keys (a speaker's) only from admin
 * up. Equal rank is refused: an operator could otherwise revoke a fellow operator, or rotate its
 * key and act under its name. Superadmins may revoke one another's keys, as nobody ranks above
 * them to revoke a leaked one.
 */
function assertCanManage(caller: Principal, target: ApiKeyRow, action: "change" | "revoke" | "rotate") {
  if (target.id === caller.keyId) return;
  if (target.role === "node") {
    if (!roleAtLeast(caller.role, "admin")) throw new ForbiddenError(`a speaker's node key is managed from the admin role up; the key is ${caller.role}`);
    return;
  }
  const rank = roleRank(target.role as RoleName);
  if (rank < roleRank(caller.role)) return;
  if (action === "revoke" && caller.role === "superadmin" && target.role === "superadmin") return;
  throw new ForbiddenError(`a ${caller.role} key manages only itself and keys of a lower role; this one is ${target.role}`);
}

export function createApiKeyService(deps: { sql: Db; audit: AuditWriter; onKeysChanged?: () => void }) {
  const { audit } = deps;
  /** Cached key checks forget their rows once the change has committed. */
  const changed = (ctx: RequestContext) => {
    if (deps.onKeysChanged) ctx.afterCommit(deps.onKeysChanged);
  };
  const mustFind = async (db: Db, tenantId: string, id: string, forUpdate = false) => {
    const row = await findApiKeyById(db, tenantId, id, forUpdate);
    if (!row) throw new NotFoundError("API key", id);
    return row;
  };

  return {
    async create(tx: Db, ctx: RequestContext, body: CreateApiKeyBody) {
      assertCanGrant(ctx.principal.role, body.role);
      const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
      if (expiresAt && expiresAt <= ctx.now)
        throw new ValidationError("expires_at must be in the future", [{ path: "body.expires_at", message: "must be in the future" }]);
      const { row, secret } = await mintApiKey(tx, { tenantId: ctx.principal.tenantId, name: body.name, role: body.role, now: ctx.now, expiresAt });
      await audit.record(tx, ctx, {
        action: "create",
        resource_type: "api_key",
        resource_id: row.id,
        summary: `API key ${row.key_prefix} (${row.role}) created`,
        changes: changesOf(null, { name: row.name, role: row.role, expires_at: iso(row.expires_at) }, ["name", "role", "expires_at"]),
      });
      return { ...toApiKey(row), secret };
    },

    async list(ctx: RequestContext, q: { cursor?: string | undefined; limit: number; role?: string | undefined }): Promise<Page<ApiKey>> {
      const afterId = afterIdOf(q.cursor);
      const rows = await listApiKeys(deps.sql, ctx.principal.tenantId, { afterId, limit: q.limit, role: q.role });
      return toPage(rows, q.limit, (r) => [r.id], toApiKey);
    },

    async get(ctx: RequestContext, id: string) {
      return toApiKey(await mustFind(deps.sql, ctx.principal.tenantId, id));
    },

    async update(tx: Db, ctx: RequestContext, id: string, body: UpdateApiKeyBody) {
      changed(ctx);
      const before = await mustFind(tx, ctx.principal.tenantId, id, true);
      assertCanManage(ctx.principal, before, "change");
      if (body.role !== undefined) {
        if (before.role === "node" || body.role === ("node" as string)) {
          throw new ValidationError("a node key's role cannot change", [{ path: "body.role", message: "node keys keep their role" }]);
        }
        assertCanGrant(ctx.principal.role, body.role);
      }
      if (before.revoked_at) throw new ConflictError("the key is revoked");
      const expiresAt = body.expires_at === undefined ? before.expires_at : body.expires_at === null ? null : new Date(body.expires_at);
      const after = await updateApiKey(tx, ctx.principal.tenantId, id, {
        name: body.name ?? before.name,
        role: body.role ?? before.role,
        expires_at: expiresAt,
        updated_at: ctx.now,
      });
      const view = (r: ApiKeyRow) => ({ name: r.name, role: r.role, expires_at: iso(r.expires_at) });
      await audit.record(tx, ctx, {
        action: "update",
        resource_type: "api_key",
        resource_id: id,
        summary: `API key ${after.key_prefix} updated`,
        changes: changesOf(view(before), view(after), ["name", "role", "expires_at"]),
      });
      return toApiKey(after);
    },

    async revoke(tx: Db, ctx: RequestContext, id: string) {
      changed(ctx);
      const before = await mustFind(tx, ctx.principal.tenantId, id, true);
      assertCanManage(ctx.principal, before, "revoke");
      if (before.revoked_at) return; // already revoked: nothing changes, nothing to record
      const after = await revokeApiKey(tx, ctx.principal.tenantId, id, ctx.now);
      await audit.record(tx, ctx, {
        action: "revoke",
        resource_type: "api_key",
        resource_id: id,
        summary: `API key ${after.key_prefix} revoked`,
        changes: { revoked_at: { from: null, to: iso(after.revoked_at) } },
      });
    },

    /**
     * A new secret (the old one lasts `grace_seconds`) for the calling key, or for a key it
     * outranks: rotation exists to hand out a new secret, and a key that outranks another may
     * already replace it with one of its own making. An equal rank other than itself is refused
     * (assertCanManage), so nobody receives a secret to act under a peer's name; node keys only
     * from the admin role up.
     */
    async rotate(tx: Db, ctx: RequestContext, id: string, body: { grace_seconds?: number | undefined }): Promise<RotatedApiKey> {
      changed(ctx);
      const before = await mustFind(tx, ctx.principal.tenantId, id, true);
      assertCanManage(ctx.principal, before, "rotate");
      if (before.revoked_at) throw new ConflictError("the key is revoked and cannot be rotated");
      const grace = body.grace_seconds ?? 0;
      const secret = newKeySecret(before.key_prefix);
      const after = await rotateApiKeySecret(tx, ctx.principal.tenantId, id, {
        secret_hash: hashKeySecret(secret),
        previous_valid_until: grace > 0 ? new Date(ctx.now.getTime() + grace * 1000) : null,
        updated_at: ctx.now,
      });
      await audit.record(tx, ctx, {
        action: "rotate",
        resource_type: "api_key",
        resource_id: id,
        summary: `API key ${after.key_prefix} rotated (grace ${grace} s)`,
        changes: { grace_seconds: { from: null, to: grace } },
      });
      return { ...toApiKey(after), secret };
    },
  };
}

export type ApiKeyService = ReturnType<typeof createApiKeyService>;
