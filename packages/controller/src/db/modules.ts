import type { DohResolverPolicy, ModuleAction, ModuleType } from "@rlc/shared/schemas";
import type { Db } from "./connect.js";
import { type KeysetPage, keysetPage, whereEquals } from "./tenant-table.js";

export interface ModuleRow {
  id: string;
  tenant_id: string;
  name: string;
  type: ModuleType;
  description: string;
  enabled: boolean;
  rpki_policy: "off" | "report" | "drop_invalid";
  action: ModuleAction;
  community_id: string | null;
  /** From module_doh_profiles, in position order. */
  doh_profile_ids: string[];
  doh_resolver_policy: DohResolverPolicy;
  refresh_interval_minutes: number | null;
  /** NULL: the tenant's `source_max_stale_hours`; 0: kept forever. */
  max_stale_hours: number | null;
  last_refreshed_at: Date | null;
  last_refresh_error: string | null;
  prefix_count_v4: number;
  prefix_count_v6: number;
  collected_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type ModuleWrite = Pick<
  ModuleRow,
  | "name"
  | "description"
  | "enabled"
  | "rpki_policy"
  | "action"
  | "community_id"
  | "doh_resolver_policy"
  | "refresh_interval_minutes"
  | "max_stale_hours"
  | "updated_at"
>;

const moduleColumns = (db: Db) => db`
  m.*, coalesce((SELECT array_agg(p.doh_profile_id ORDER BY p.position) FROM module_doh_profiles p WHERE p.module_id = m.id), '{}'::uuid[]) AS doh_profile_ids`;

export async function insertModule(db: Db, row: Omit<ModuleRow, "doh_profile_ids">): Promise<void> {
  await db`
    INSERT INTO modules (id, tenant_id, name, type, description, enabled, rpki_policy, action, community_id, doh_resolver_policy, refresh_interval_minutes, max_stale_hours,
                         last_refreshed_at, last_refresh_error, prefix_count_v4, prefix_count_v6, collected_at, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.name}, ${row.type}, ${row.description}, ${row.enabled}, ${row.rpki_policy}, ${row.action}, ${row.community_id},
            ${db.json(row.doh_resolver_policy as never)}, ${row.refresh_interval_minutes}, ${row.max_stale_hours}, ${row.last_refreshed_at}, ${row.last_refresh_error},
            ${row.prefix_count_v4}, ${row.prefix_count_v6}, ${row.collected_at}, ${row.created_at}, ${row.updated_at})`;
}

/** Replaces the module's DoH profile list, keeping the given order. */
export async function replaceModuleDohProfiles(db: Db, tenantId: string, moduleId: string, profileIds: readonly string[]): Promise<void> {
  await db`DELETE FROM module_doh_profiles WHERE tenant_id = ${tenantId} AND module_id = ${moduleId}`;
  if (profileIds.length === 0) return;
  await db`
    INSERT INTO module_doh_profiles (tenant_id, module_id, position, doh_profile_id)
    SELECT ${tenantId}, ${moduleId}, p.ord - 1, p.id FROM unnest(${profileIds as string[]}::uuid[]) WITH ORDINALITY AS p(id, ord)`;
}

export async function findModuleById(db: Db, tenantId: string, id: string, forUpdate = false): Promise<ModuleRow | undefined> {
  const [row] = forUpdate
    ? await db<ModuleRow[]>`SELECT ${moduleColumns(db)} FROM modules m WHERE m.tenant_id = ${tenantId} AND m.id = ${id} FOR UPDATE OF m`
    : await db<ModuleRow[]>`SELECT ${moduleColumns(db)} FROM modules m WHERE m.tenant_id = ${tenantId} AND m.id = ${id}`;
  return row;
}

export async function findModuleByName(db: Db, tenantId: string, name: string): Promise<{ id: string } | undefined> {
  const [row] = await db<{ id: string }[]>`SELECT id FROM modules WHERE tenant_id = ${tenantId} AND name = ${name}`;
  return row;
}

export async function listModules(
  db: Db,
  tenantId: string,
  opts: KeysetPage & { type?: string | undefined; enabled?: boolean | undefined; q?: string | undefined },
): Promise<ModuleRow[]> {
  return db<ModuleRow[]>`
    SELECT ${moduleColumns(db)} FROM modules m
    WHERE m.tenant_id = ${tenantId} ${whereEquals(db, "m.type", opts.type)} ${whereEquals(db, "m.enabled", opts.enabled)}
      ${opts.q === undefined ? db`` : db`AND strpos(lower(m.name), lower(${opts.q})) > 0`}
      ${keysetPage(db, opts, db`m.id`)}`;
}

/** Every module of the tenant, by name (the catalog). */
export async function listAllModules(db: Db, tenantId: string): Promise<ModuleRow[]> {
  return db<ModuleRow[]>`SELECT ${moduleColumns(db)} FROM modules m WHERE m.tenant_id = ${tenantId} ORDER BY m.name, m.id`;
}

export async function updateModule(db: Db, tenantId: string, id: string, patch: ModuleWrite): Promise<void> {
  await db`
    UPDATE modules
    SET name = ${patch.name}, description = ${patch.description}, enabled = ${patch.enabled}, rpki_policy = ${patch.rpki_policy}, action = ${patch.action}, community_id = ${patch.community_id},
        doh_resolver_policy = ${db.json(patch.doh_resolver_policy as never)}, refresh_interval_minutes = ${patch.refresh_interval_minutes},
        max_stale_hours = ${patch.max_stale_hours}, updated_at = ${patch.updated_at}
    WHERE tenant_id = ${tenantId} AND id = ${id}`;
}

/** Entries, sources and the DoH profile list go with the module (ON DELETE CASCADE). */
export async function deleteModule(db: Db, tenantId: string, id: string): Promise<void> {
  await db`DELETE FROM modules WHERE tenant_id = ${tenantId} AND id = ${id}`;
}

export async function listModulesUsingCommunity(db: Db, tenantId: string, communityId: string): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`
    SELECT id, name FROM modules WHERE tenant_id = ${tenantId} AND community_id = ${communityId} ORDER BY name`;
}

export async function listModulesUsingDohProfile(db: Db, tenantId: string, profileId: string): Promise<{ id: string; name: string }[]> {
  return db<{ id: string; name: string }[]>`
    SELECT m.id, m.name FROM module_doh_profiles p JOIN modules m ON m.id = p.module_id
    WHERE p.tenant_id = ${tenantId} AND p.doh_profile_id = ${profileId} ORDER BY m.name`;
}

export async function countModuleEntries(db: Db, tenantId: string, id: string): Promise<{ entries: number; sources: number }> {
  const [row] = await db<{ entries: number; sources: number }[]>`
    SELECT (SELECT count(*) FROM as_entries WHERE tenant_id = ${tenantId} AND module_id = ${id})::int
         + (SELECT count(*) FROM domain_entries WHERE tenant_id = ${tenantId} AND module_id = ${id})::int
         + (SELECT count(*) FROM ip_range_entries WHERE tenant_id = ${tenantId} AND module_id = ${id})::int
         + (SELECT count(*) FROM country_entries WHERE tenant_id = ${tenantId} AND module_id = ${id})::int AS entries,
           (SELECT count(*) FROM cdn_sources WHERE tenant_id = ${tenantId} AND module_id = ${id})::int AS sources`;
  return row ?? { entries: 0, sources: 0 };
}
