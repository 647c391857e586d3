import type { Db } from "./connect.js";

export interface LookupModuleRow {
  id: string;
  name: string;
  type: "AS_PREFIXES" | "DOMAINS" | "IP_RANGES";
  enabled: boolean;
  community_id: string | null;
  community: string | null;
  community_title: string | null;
}

export async function listLookupModules(db: Db, tenantId: string): Promise<Map<string, LookupModuleRow>> {
  const rows = await db<LookupModuleRow[]>`
    SELECT m.id, m.name, m.type, m.enabled, m.community_id, c.community, c.title AS community_title
    FROM modules m LEFT JOIN communities c ON c.tenant_id = m.tenant_id AND c.id = m.community_id
    WHERE m.tenant_id = ${tenantId}`;
  return new Map(rows.map((r) => [r.id, r]));
}

/** IP_RANGES entries containing the address (GiST index on `network`). */
export async function findIpRangeEntriesContaining(db: Db, tenantId: string, address: string): Promise<{ id: string; module_id: string; cidr: string }[]> {
  return db<{ id: string; module_id: string; cidr: string }[]>`
    SELECT id, module_id, cidr FROM ip_range_entries
    WHERE tenant_id = ${tenantId} AND network >>= ${address}::inet ORDER BY masklen(network), id`;
}

/** DOMAINS entries equal to the name, or a parent of it with include_subdomains. */
export async function findDomainEntriesMatching(db: Db, tenantId: string, name: string, parents: string[]): Promise<{ id: string; module_id: string; domain: string }[]> {
  return db<{ id: string; module_id: string; domain: string }[]>`
    SELECT id, module_id, domain FROM domain_entries
    WHERE tenant_id = ${tenantId} AND (domain = ${name} OR (include_subdomains AND domain = ANY(${parents}::text[])))
    ORDER BY domain, id`;
}
