import type { ModuleType } from "@rlc/shared/schemas";
import type { Db } from "./connect.js";
import type { DohProfileRow as StoredDohProfileRow } from "./doh-profiles.js";

/** What the ingest needs of a module: its kind, community and DoH setup. */
export interface IngestModuleRow {
  id: string;
  name: string;
  type: ModuleType;
  enabled: boolean;
  rpki_policy: "off" | "report" | "drop_invalid";
  /** `exclude`: its prefixes are cut out of what the tenant announces. */
  action: "announce" | "exclude";
  community: string | null;
  doh_resolver_policy: Record<string, unknown>;
  collected_at: Date | null;
  refresh_interval_minutes: number | null;
  last_refreshed_at: Date | null;
  /** NULL: the tenant's `source_max_stale_hours`; 0: kept forever (stale-sources.ts). */
  max_stale_hours: number | null;
}

export async function listIngestModules(db: Db, tenantId: string): Promise<IngestModuleRow[]> {
  return db<IngestModuleRow[]>`
    SELECT m.id, m.name, m.type, m.enabled, m.rpki_policy, m.action, c.community, m.doh_resolver_policy, m.collected_at,
           m.refresh_interval_minutes, m.last_refreshed_at, m.max_stale_hours
    FROM modules m LEFT JOIN communities c ON c.tenant_id = m.tenant_id AND c.id = m.community_id
    WHERE m.tenant_id = ${tenantId} ORDER BY m.id`;
}

export async function listModuleAsns(db: Db, moduleId: string): Promise<number[]> {
  const rows = await db<{ asn: string }[]>`SELECT asn::text AS asn FROM as_entries WHERE module_id = ${moduleId} AND asn IS NOT NULL ORDER BY asn`;
  return rows.map((r) => Number(r.asn));
}

export async function listModuleAsSets(db: Db, moduleId: string): Promise<string[]> {
  const rows = await db<{ as_set: string }[]>`SELECT as_set FROM as_entries WHERE module_id = ${moduleId} AND as_set IS NOT NULL ORDER BY as_set`;
  return rows.map((r) => r.as_set);
}

export async function listModuleDomains(db: Db, moduleId: string): Promise<{ name: string; include_subdomains: boolean }[]> {
  return db<{ name: string; include_subdomains: boolean }[]>`
    SELECT domain AS name, include_subdomains FROM domain_entries WHERE module_id = ${moduleId} ORDER BY domain`;
}

export async function listModuleIpRanges(db: Db, moduleId: string): Promise<{ id: string; cidr: string }[]> {
  return db<{ id: string; cidr: string }[]>`SELECT id, cidr FROM ip_range_entries WHERE module_id = ${moduleId} ORDER BY id`;
}

export async function listModuleCountries(db: Db, moduleId: string): Promise<string[]> {
  const rows = await db<{ country: string }[]>`SELECT country FROM country_entries WHERE module_id = ${moduleId} ORDER BY country`;
  return rows.map((r) => r.country);
}

export interface CdnSourceRow {
  id: string;
  url: string;
  format: "text" | "json";
  json_path: string | null;
  allow_empty: boolean;
}

export async function listEnabledCdnSources(db: Db, moduleId: string): Promise<CdnSourceRow[]> {
  return db<CdnSourceRow[]>`
    SELECT id, url, format, json_path, allow_empty FROM cdn_sources WHERE module_id = ${moduleId} AND enabled ORDER BY id`;
}

/** What collecting needs of a module's DoH profile (header values sealed when headers_sealed: see openHeaders). */
export type DohProfileRow = Pick<StoredDohProfileRow, "id" | "name" | "url" | "method" | "format" | "timeout_ms" | "headers" | "headers_sealed">;

export async function listModuleDohProfiles(db: Db, moduleId: string): Promise<DohProfileRow[]> {
  return db<DohProfileRow[]>`
    SELECT p.id, p.name, p.url, p.method, p.format, p.timeout_ms, p.headers, p.headers_sealed
    FROM module_doh_profiles mp JOIN doh_profiles p ON p.id = mp.doh_profile_id
    WHERE mp.module_id = ${moduleId} ORDER BY mp.position`;
}

export async function updateModuleRefreshed(
  db: Db,
  moduleId: string,
  r: { prefix_count_v4: number; prefix_count_v6: number; collected_at: Date; last_refreshed_at: Date | null; last_refresh_error: string | null },
): Promise<void> {
  await db`
    UPDATE modules SET prefix_count_v4 = ${r.prefix_count_v4}, prefix_count_v6 = ${r.prefix_count_v6}, collected_at = ${r.collected_at},
      last_refreshed_at = COALESCE(${r.last_refreshed_at}, last_refreshed_at), last_refresh_error = ${r.last_refresh_error}
    WHERE id = ${moduleId}`;
}

export async function updateCdnSourceStatus(
  db: Db,
  sourceId: string,
  r: { ok: boolean; error: string | null; prefix_count: number | null; at: Date },
): Promise<void> {
  if (r.ok) {
    await db`UPDATE cdn_sources SET last_refreshed_at = ${r.at}, last_error = NULL, last_prefix_count = ${r.prefix_count} WHERE id = ${sourceId}`;
  } else {
    await db`UPDATE cdn_sources SET last_error = ${r.error} WHERE id = ${sourceId}`;
  }
}

export async function listCommunityTitles(db: Db, tenantId: string): Promise<Map<string, string>> {
  const rows = await db<{ community: string; title: string }[]>`SELECT community, title FROM communities WHERE tenant_id = ${tenantId}`;
  return new Map(rows.map((r) => [r.community, r.title]));
}

export async function moduleExists(db: Db, tenantId: string, moduleId: string): Promise<boolean> {
  const [row] = await db`SELECT 1 FROM modules WHERE tenant_id = ${tenantId} AND id = ${moduleId}`;
  return row !== undefined;
}

/**
 * Enabled modules with a refresh interval whose last collection is older than it, and for
 * which no ingest job that names them is queued or running.
 */
export async function listModulesDueForRefresh(db: Db, now: Date): Promise<{ tenant_id: string; id: string }[]> {
  return db<{ tenant_id: string; id: string }[]>`
    SELECT m.tenant_id, m.id FROM modules m
    WHERE m.enabled AND m.refresh_interval_minutes IS NOT NULL
      AND (m.collected_at IS NULL OR m.collected_at <= ${now}::timestamptz - make_interval(mins => m.refresh_interval_minutes))
      AND NOT EXISTS (
        SELECT 1 FROM jobs j WHERE j.tenant_id = m.tenant_id AND j.type = 'module_ingest' AND j.status IN ('queued', 'running')
          AND (j.params->'module_ids' = 'null'::jsonb OR j.params->'module_ids' ? m.id::text))`;
}
