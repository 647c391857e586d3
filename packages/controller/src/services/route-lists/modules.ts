import { ConflictError, NotFoundError, ValidationError } from "@rlc/shared/errors";
import {
  type CreateModuleBody,
  DOH_RESOLVER_POLICY_DEFAULTS,
  type DohResolverPolicy,
  type DohResolverPolicyInput,
  type Module,
  type ModuleListQuery,
  type UpdateModuleBody,
} from "@rlc/shared/schemas";
import { findCommunityById } from "../../db/communities.js";
import type { Db } from "../../db/connect.js";
import { findExistingDohProfileIds } from "../../db/doh-profiles.js";
import {
  countModuleEntries,
  deleteModule,
  findModuleById,
  findModuleByName,
  insertModule,
  listModules,
  type ModuleRow,
  type ModuleWrite,
  replaceModuleDohProfiles,
  updateModule,
} from "../../db/modules.js";
import { isForeignKeyViolation, isUniqueViolation } from "../../db/pg-errors.js";
import type { Page } from "../../lib/cursor.js";
import { pageById } from "../../lib/id-cursor.js";
import { uuidv7 } from "../../lib/ids.js";
import { iso, isoRequired } from "../../lib/time.js";
import { type AuditWriter, changesOf } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";

/** The API's `max_stale_hours` as stored: "tenant" is NULL, forever (null) is 0. */
const storedMaxStale = (v: Module["max_stale_hours"]): number | null => (v === "tenant" ? null : v === null ? 0 : v);

export function toModule(row: ModuleRow): Module {
  return {
    id: row.id,
    name: row.name,
    type: row.type,
    description: row.description,
    enabled: row.enabled,
    rpki_policy: row.rpki_policy,
    action: row.action,
    community_id: row.community_id,
    doh_profile_id: row.doh_profile_ids[0] ?? null,
    doh_profile_ids: row.doh_profile_ids,
    doh_resolver_policy: row.doh_resolver_policy,
    refresh_interval_minutes: row.refresh_interval_minutes,
    max_stale_hours: row.max_stale_hours === null ? "tenant" : row.max_stale_hours === 0 ? null : row.max_stale_hours,
    last_refreshed_at: iso(row.last_refreshed_at),
    last_refresh_error: row.last_refresh_error,
    snapshot: { prefix_count_v4: row.prefix_count_v4, prefix_count_v6: row.prefix_count_v6, collected_at: iso(row.collected_at) },
    created_at: isoRequired(row.created_at),
    updated_at: isoRequired(row.updated_at),
  };
}

/** The module of the caller's tenant, or 404 (another tenant's id included). */
export async function mustFindModule(db: Db, tenantId: string, id: string, forUpdate = false): Promise<ModuleRow> {
  const row = await findModuleById(db, tenantId, id, forUpdate);
  if (!row) throw new NotFoundError("module", id);
  return row;
}

const invalid = (path: string, message: string) => new ValidationError(`${path}: ${message}`, [{ path: `body.${path}`, message }]);

/**
 * The DoH profile list a body writes, or undefined when it writes none. `doh_profile_id` is the
 * legacy single form of `doh_profile_ids`; null and [] are "not set" when the other form is set,
 * and writing both with different values is refused (a 400).
 */
export function dohProfileIdsOf(body: { doh_profile_id?: string | null | undefined; doh_profile_ids?: string[] | null | undefined }): string[] | undefined {
  const single = body.doh_profile_id;
  const list = body.doh_profile_ids;
  if (single === undefined && list === undefined) return undefined;
  const listSet = Array.isArray(list) && list.length > 0;
  if (single != null && listSet && (list.length !== 1 || list[0] !== single)) {
    throw invalid("doh_profile_id", `conflicts with doh_profile_ids: doh_profile_id ${single} stands for doh_profile_ids [${single}]`);
  }
  if (single != null) return [single];
  const ids = list ?? [];
  if (new Set(ids).size !== ids.length) throw invalid("doh_profile_ids", "a profile is listed twice");
  return ids;
}

function isEmptyPolicy(policy: DohResolverPolicyInput | null | undefined): boolean {
  return policy == null || Object.values(policy).every((v) => v === undefined);
}

function completePolicy(base: DohResolverPolicy, input: DohResolverPolicyInput): DohResolverPolicy {
  const merged = { ...base };
  for (const [k, v] of Object.entries(input)) if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  // Record types are a set; kept in one order so equal policies compare equal.
  merged.record_types = (["A", "AAAA"] as const).filter((t) => merged.record_types.includes(t));
  return merged;
}

const defaultPolicy = (): DohResolverPolicy => ({ ...DOH_RESOLVER_POLICY_DEFAULTS, record_types: [...DOH_RESOLVER_POLICY_DEFAULTS.record_types] });

const AUDITED = [
  "name",
  "type",
  "description",
  "enabled",
  "rpki_policy",
  "action",
  "community_id",
  "doh_profile_ids",
  "doh_resolver_policy",
  "refresh_interval_minutes",
  "max_stale_hours",
] as const;
const auditView = (m: Module) => Object.fromEntries(AUDITED.map((k) => [k, m[k]])) as Record<(typeof AUDITED)[number], unknown>;

export function createModuleService(deps: { sql: Db; audit: AuditWriter }) {
  const { audit } = deps;

  async function checkReferences(db: Db, tenantId: string, communityId: string | null, profileIds: readonly string[]) {
    if (communityId !== null && !(await findCommunityById(db, tenantId, communityId))) {
      throw invalid("community_id", `no community ${communityId} in this tenant`);
    }
    const known = await findExistingDohProfileIds(db, tenantId, profileIds);
    const unknown = profileIds.filter((id) => !known.has(id));
    if (unknown.length > 0) throw invalid("doh_profile_ids", `no DoH profile ${unknown.join(", ")} in this tenant`);
  }

  async function assertNameFree(db: Db, tenantId: string, name: string, self: string | null) {
    const other = await findModuleByName(db, tenantId, name);
    if (other && other.id !== self) throw new ConflictError(`a module named "${name}" already exists`, { module_id: other.id });
  }

  // The checks above run before the write; a concurrent writer can still win the race, and
  // the constraint's error then becomes the same answer the check gives.
  const writeFailure = (err: unknown, name: string) => {
    if (isUniqueViolation(err)) return new ConflictError(`a module named "${name}" already exists`);
    if (isForeignKeyViolation(err)) return invalid("community_id", "the community or a DoH profile was deleted meanwhile");
    return err;
  };

  return {
    async create(tx: Db, ctx: RequestContext, body: CreateModuleBody): Promise<Module> {
      const tenantId = ctx.principal.tenantId;
      const profileIds = dohProfileIdsOf(body) ?? [];
      if (body.type !== "DOMAINS") {
        if (profileIds.length > 0) throw invalid("doh_profile_ids", "DoH profiles apply only to DOMAINS modules");
        if (!isEmptyPolicy(body.doh_resolver_policy)) throw invalid("doh_resolver_policy", "a resolver policy applies only to DOMAINS modules");
      }
      const communityId = body.community_id ?? null;
      await checkReferences(tx, tenantId, communityId, profileIds);
      await assertNameFree(tx, tenantId, body.name, null);
      const row: ModuleRow = {
        id: uuidv7(),
        tenant_id: tenantId,
        name: body.name,
        type: body.type,
        description: body.description ?? "",
        enabled: body.enabled ?? true,
        rpki_policy: body.rpki_policy ?? "off",
        action: body.action ?? "announce",
        community_id: communityId,
        doh_profile_ids: profileIds,
        doh_resolver_policy: completePolicy(defaultPolicy(), body.doh_resolver_policy ?? {}),
        refresh_interval_minutes: body.refresh_interval_minutes ?? null,
        max_stale_hours: storedMaxStale(body.max_stale_hours === undefined ? "tenant" : body.max_stale_hours),
        last_refreshed_at: null,
        last_refresh_error: null,
        prefix_count_v4: 0,
        prefix_count_v6: 0,
        collected_at: null,
        created_at: ctx.now,
        updated_at: ctx.now,
      };
      try {
        await insertModule(tx, row);
        await replaceModuleDohProfiles(tx, tenantId, row.id, profileIds);
      } catch (err) {
        throw writeFailure(err, body.name);
      }
      const module = toModule(row);
      await audit.record(tx, ctx, {
        action: "create",
        resource_type: "module",
        resource_id: row.id,
        summary: `module ${row.name} (${row.type}) created`,
        changes: changesOf(null, auditView(module), AUDITED),
      });
      return module;
    },

    async list(ctx: RequestContext, q: ModuleListQuery): Promise<Page<Module>> {
      const filters = { limit: q.limit, type: q.type, enabled: q.enabled, q: q.q };
      return pageById(q, (afterId) => listModules(deps.sql, ctx.principal.tenantId, { afterId, ...filters }), toModule);
    },

    async get(ctx: RequestContext, id: string): Promise<Module> {
      return toModule(await mustFindModule(deps.sql, ctx.principal.tenantId, id));
    },

    async update(tx: Db, ctx: RequestContext, id: string, body: UpdateModuleBody): Promise<Module> {
      const tenantId = ctx.principal.tenantId;
      const before = await mustFindModule(tx, tenantId, id, true);
      if (body.type !== undefined && body.type !== before.type) {
        throw invalid("type", `the type cannot change after create (the module is ${before.type})`);
      }
      const written = dohProfileIdsOf(body);
      if (before.type !== "DOMAINS") {
        if (written !== undefined && written.length > 0) throw invalid("doh_profile_ids", "DoH profiles apply only to DOMAINS modules");
        if (!isEmptyPolicy(body.doh_resolver_policy)) throw invalid("doh_resolver_policy", "a resolver policy applies only to DOMAINS modules");
      }
      const profileIds = written ?? before.doh_profile_ids;
      const communityId = body.community_id === undefined ? before.community_id : body.community_id;
      await checkReferences(tx, tenantId, communityId === before.community_id ? null : communityId, written ?? []);
      const name = body.name ?? before.name;
      if (name !== before.name) await assertNameFree(tx, tenantId, name, id);

      const policy =
        body.doh_resolver_policy === undefined
          ? before.doh_resolver_policy
          : body.doh_resolver_policy === null
            ? defaultPolicy()
            : completePolicy(before.doh_resolver_policy, body.doh_resolver_policy);
      const patch: ModuleWrite = {
        name,
        description: body.description ?? before.description,
        enabled: body.enabled ?? before.enabled,
        rpki_policy: body.rpki_policy ?? before.rpki_policy,
        action: body.action ?? before.action,
        community_id: communityId,
        doh_resolver_policy: policy,
        refresh_interval_minutes: body.refresh_interval_minutes === undefined ? before.refresh_interval_minutes : body.refresh_interval_minutes,
        max_stale_hours: body.max_stale_hours === undefined ? before.max_stale_hours : storedMaxStale(body.max_stale_hours),
        updated_at: ctx.now,
      };
      const after: ModuleRow = { ...before, ...patch, doh_profile_ids: profileIds };
      const changes = changesOf(auditView(toModule(before)), auditView(toModule(after)), AUDITED);
      if (Object.keys(changes).length === 0) return toModule(before); // nothing changes, nothing to record

      try {
        await updateModule(tx, tenantId, id, patch);
        if (written !== undefined) await replaceModuleDohProfiles(tx, tenantId, id, profileIds);
      } catch (err) {
        throw writeFailure(err, name);
      }
      await audit.record(tx, ctx, { action: "update", resource_type: "module", resource_id: id, summary: `module ${name} updated`, changes });
      return toModule(after);
    },

    async remove(tx: Db, ctx: RequestContext, id: string): Promise<void> {
      const tenantId = ctx.principal.tenantId;
      const before = await mustFindModule(tx, tenantId, id, true);
      const counts = await countModuleEntries(tx, tenantId, id);
      await deleteModule(tx, tenantId, id);
      await audit.record(tx, ctx, {
        action: "delete",
        resource_type: "module",
        resource_id: id,
        summary: `module ${before.name} (${before.type}) deleted with ${counts.entries} entries and ${counts.sources} CDN sources`,
        changes: changesOf(auditView(toModule(before)), null, AUDITED),
      });
    },
  };
}

export type ModuleService = ReturnType<typeof createModuleService>;
