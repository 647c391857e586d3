import type { ModuleType } from "@rlc/shared/schemas";
import type { Db } from "./connect.js";

export interface LookupModuleRow {
  id: string;
  name: string;
  type: ModuleType;
  enabled: boolean;
  action: "announce" | "exclude";
  community_id: string | null;
  community: string | null;
  community_title: string | null;
}

export async function listLookupModules(db: Db, tenantId: string): Promise<Map<string, LookupModuleRow>> {
  const rows = await db<LookupModuleRow[]>`
    SELECT m.id, m.name, m.type, m.enabled, m.action, m.community_id, c.community, c.title AS community_title
    FROM modules m LEFT JOIN communities c ON c.tenant_id = m.tenant_id AND c.id = m.community_id
    WHERE m.tenant_id = ${tenantId}`;
  return new Map(rows.map((r) => [r.id, r]));
}

/** Every IP-range entry of the tenant, by id (the lookup's entry layer is built from them). */
export async function listTenantIpRangeEntries(db: Db, tenantId: string): Promise<{ id: string; module_id: string; cidr: string }[]> {
  return db<{ id: string; module_id: string; cidr: string }[]>`
    SELECT id, module_id, cidr FROM ip_range_entries WHERE module_id IN (SELECT id FROM modules WHERE tenant_id = ${tenantId}) ORDER BY id`;
}

/** What the lookup's cached state of a tenant was built from; any change means rebuild that part. */
export interface LookupVersion {
  snapshot_generation: string;
  revision_id: number | null;
  /** Changes whenever a module, community or IP-range entry of the tenant is added, changed or removed. */
  config: string;
}

/**
 * One cheap read (a few index probes) that says whether a tenant's lookup state is stale.
 * `config` is, per table, the row count and the sum of the rows' xmin: every INSERT or UPDATE
 * gives its row a new transaction id and every DELETE lowers the count, so any committed change
 * moves it; updated_at would miss two writes within the same millisecond (or a manual clock).
 */
export async function findLookupVersion(db: Db, tenantId: string): Promise<LookupVersion> {
  const [row] = await db<LookupVersion[]>`
    SELECT
      coalesce((SELECT snapshot_generation FROM tenant_generations WHERE tenant_id = ${tenantId}), 0)::text AS snapshot_generation,
      (SELECT max(revision_id) FROM revisions WHERE tenant_id = ${tenantId}) AS revision_id,
      concat_ws('/',
        (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM modules WHERE tenant_id = ${tenantId}),
        (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM communities WHERE tenant_id = ${tenantId}),
        (SELECT count(*) || '.' || coalesce(sum(xmin::text::bigint), 0) FROM ip_range_entries
          WHERE module_id IN (SELECT id FROM modules WHERE tenant_id = ${tenantId}))) AS config`;
  return row!;
}

/** DOMAINS entries equal to the name, or a parent of it with include_subdomains. */
export async function findDomainEntriesMatching(
  db: Db,
  tenantId: string,
  name: string,
  parents: string[],
): Promise<{ id: string; module_id: string; domain: string }[]> {
  return db<{ id: string; module_id: string; domain: string }[]>`
    SELECT id, module_id, domain FROM domain_entries
    WHERE tenant_id = ${tenantId} AND (domain = ${name} OR (include_subdomains AND domain = ANY(${parents}::text[])))
    ORDER BY domain, id`;
}
