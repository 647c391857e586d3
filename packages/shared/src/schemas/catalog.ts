import { z } from "zod";
import { CdnSource } from "./cdn-sources.js";
import { Community } from "./communities.js";
import { DohProfile } from "./doh-profiles.js";
import { AsEntry, CountryEntry, DomainEntry, IpRangeEntry } from "./entries.js";
import { Module } from "./modules.js";

export const CatalogModule = Module.extend({
  community: Community.nullable(),
  entries: z.object({
    asns: z.array(AsEntry),
    domains: z.array(DomainEntry),
    ip_ranges: z.array(IpRangeEntry),
    countries: z.array(CountryEntry),
  }),
  cdn_sources: z.array(CdnSource),
}).meta({ id: "CatalogModule" });

export const Catalog = z
  .object({
    modules: z.array(CatalogModule),
    communities: z.array(Community),
    doh_profiles: z.array(DohProfile),
    current_revision_id: z.number().int().nullable(),
  })
  .meta({ id: "Catalog", description: "The tenant's whole configuration in one read; not paginated." });

export type Catalog = z.infer<typeof Catalog>;
export type CatalogModule = z.infer<typeof CatalogModule>;
