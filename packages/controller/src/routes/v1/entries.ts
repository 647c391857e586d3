import {
  AsEntry,
  CountryEntry,
  CreateAsEntryBody,
  CreateCountryEntryBody,
  CreateDomainEntryBody,
  CreateIpRangeEntryBody,
  DomainEntry,
  EntryListQuery,
  IpRangeEntry,
  ModuleEntryParams,
  ModuleParams,
  UpdateAsEntryBody,
  UpdateCountryEntryBody,
  UpdateDomainEntryBody,
  UpdateIpRangeEntryBody,
} from "@rlc/shared/schemas";
import type { z } from "zod";
import type { EntryKind } from "../../services/route-lists/entries.js";
import { resource, resourceRoutes } from "../resource-routes.js";
import type { RoutePlugin } from "../route-file.js";

/** The entry collections differ only by schemas, path and words. */
const collections = [
  {
    kind: "as",
    path: "as-entries",
    item: AsEntry,
    create: CreateAsEntryBody,
    update: UpdateAsEntryBody,
    noun: "AS entry",
    a: "an AS entry",
    rules: "`asn` 1..4294967295, `AS13335` accepted; a `prefix` member is refused (removed). Only on AS_PREFIXES modules.",
  },
  {
    kind: "domain",
    path: "domain-entries",
    item: DomainEntry,
    create: CreateDomainEntryBody,
    update: UpdateDomainEntryBody,
    noun: "domain entry",
    a: "a domain entry",
    rules: "The name is lower-cased, its trailing dot removed and an IDN turned into punycode. Only on DOMAINS modules.",
  },
  {
    kind: "ip_range",
    path: "ip-range-entries",
    item: IpRangeEntry,
    create: CreateIpRangeEntryBody,
    update: UpdateIpRangeEntryBody,
    noun: "IP-range entry",
    a: "an IP-range entry",
    rules: "Canonical CIDR; a bare address is a /32 or /128; host bits set is a 400 naming the network. Only on IP_RANGES modules.",
  },
  {
    kind: "country",
    path: "country-entries",
    item: CountryEntry,
    create: CreateCountryEntryBody,
    update: UpdateCountryEntryBody,
    noun: "country entry",
    a: "a country entry",
    rules:
      "`country`: an ISO 3166-1 alpha-2 code, stored upper case (`nl` is `NL`); anything else is a 400. Refresh collects the country's address space from `COUNTRY_SOURCE`. Only on COUNTRY modules.",
  },
] as const satisfies readonly {
  kind: EntryKind;
  path: string;
  item: z.ZodType;
  create: z.ZodType;
  update: z.ZodType;
  noun: string;
  a: string;
  rules: string;
}[];

const entryRoutes: RoutePlugin = async (app, { deps }) => {
  for (const c of collections) {
    const many = c.noun.replace("entry", "entries");
    resourceRoutes(
      app,
      resource({
        tags: ["entries"],
        path: `/v1/modules/:module_id/${c.path}`,
        id: "entry_id",
        params: ModuleEntryParams,
        parentParams: ModuleParams,
        one: c.a,
        many,
        item: c.item,
        service: deps.services.entries,
        // Every call names the kind of entry first.
        leadingArgs: [c.kind],
        list: { summary: `List a module's ${many}`, querystring: EntryListQuery },
        create: { summary: `Add ${c.a}`, description: `${c.rules} A value already in the module is a 409; a module of another type is a 400.`, body: c.create },
        read: {},
        update: { description: c.rules, body: c.update },
        remove: {},
      }),
    );
  }
};

export default entryRoutes;
