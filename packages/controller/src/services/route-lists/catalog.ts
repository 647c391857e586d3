import type { Catalog, CatalogModule } from "@rlc/shared/schemas";
import { listAllCdnSourcesOfTenant } from "../../db/cdn-sources.js";
import { listAllCommunities } from "../../db/communities.js";
import type { Sql } from "../../db/connect.js";
import { listAllDohProfiles } from "../../db/doh-profiles.js";
import { listAllEntriesOfTenant } from "../../db/entries.js";
import { listAllModules } from "../../db/modules.js";
import { findCurrentRevision } from "../../db/revisions.js";
import type { RequestContext } from "../access/context.js";
import { toCdnSource } from "../ingest/cdn-sources.js";
import { toDohProfile } from "../ingest/doh-profiles.js";
import { toCommunity } from "./communities.js";
import { toAsEntry, toCountryEntry, toDomainEntry, toIpRangeEntry } from "./entries.js";
import { toModule } from "./modules.js";

function groupBy<T extends { module_id: string }>(items: T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const list = out.get(item.module_id);
    if (list) list.push(item);
    else out.set(item.module_id, [item]);
  }
  return out;
}

/**
 * The tenant's whole configuration in one read: eight queries whatever the number of modules, in
 * one REPEATABLE READ transaction so the parts agree with each other.
 */
export function createCatalogService(deps: { sql: Sql }) {
  return {
    async read(ctx: Pick<RequestContext, "principal">): Promise<Catalog> {
      const tenantId = ctx.principal.tenantId;
      return deps.sql.begin("isolation level repeatable read read only", async (tx) => {
        const [modules, communities, profiles, asns, domains, ranges, countries, sources] = [
          await listAllModules(tx, tenantId),
          await listAllCommunities(tx, tenantId),
          await listAllDohProfiles(tx, tenantId),
          await listAllEntriesOfTenant(tx, "as", tenantId),
          await listAllEntriesOfTenant(tx, "domain", tenantId),
          await listAllEntriesOfTenant(tx, "ip_range", tenantId),
          await listAllEntriesOfTenant(tx, "country", tenantId),
          await listAllCdnSourcesOfTenant(tx, tenantId),
        ];
        const communityById = new Map(communities.map((c) => [c.id, toCommunity(c)]));
        const asByModule = groupBy(asns.map(toAsEntry));
        const domainsByModule = groupBy(domains.map(toDomainEntry));
        const rangesByModule = groupBy(ranges.map(toIpRangeEntry));
        const countriesByModule = groupBy(countries.map(toCountryEntry));
        const sourcesByModule = groupBy(sources.map(toCdnSource));
        const catalogModules: CatalogModule[] = modules.map((row) => ({
          ...toModule(row),
          community: row.community_id === null ? null : (communityById.get(row.community_id) ?? null),
          entries: {
            asns: asByModule.get(row.id) ?? [],
            domains: domainsByModule.get(row.id) ?? [],
            ip_ranges: rangesByModule.get(row.id) ?? [],
            countries: countriesByModule.get(row.id) ?? [],
          },
          cdn_sources: sourcesByModule.get(row.id) ?? [],
        }));
        return {
          modules: catalogModules,
          communities: [...communityById.values()],
          doh_profiles: profiles.map(toDohProfile),
          current_revision_id: (await findCurrentRevision(tx, tenantId))?.revision_id ?? null,
        };
      });
    },
  };
}

export type CatalogService = ReturnType<typeof createCatalogService>;
