import { z } from "zod";
import { Uuid } from "./common.js";
import { ModuleType } from "./modules.js";

export const LookupQuery = z.strictObject({ q: z.string().min(1).max(260).describe("An IPv4 or IPv6 address, or an FQDN.") });

const MatchBase = {
  module_id: Uuid,
  module_name: z.string(),
  module_type: ModuleType,
  enabled: z.boolean(),
  community_id: Uuid.nullable(),
  community: z.string().nullable(),
  community_title: z.string().nullable(),
};

export const LookupMatch = z
  .union([
    z.object({ layer: z.literal("entry"), ...MatchBase, entry_id: Uuid, value: z.string() }),
    z.object({
      layer: z.literal("snapshot"),
      ...MatchBase,
      prefix: z.string().optional(),
      source: z.enum(["asn", "domain", "ip_range", "cdn", "country"]),
      origin: z.string(),
      rpki: z
        .enum(["valid", "invalid", "not_found", "unavailable"])
        .optional()
        .describe(
          "An ASN origin's prefix validated against the VRPs (RFC 6811), when `RPKI_VRP_SOURCE` is set: `unavailable` while the VRP document is missing or too old.",
        ),
      via: z.string().optional().describe("The AS-SET entry through which the ASN `origin` came (absent for an ASN entered as itself)."),
      addresses: z.array(z.string()).optional(),
    }),
  ])
  .meta({ id: "LookupMatch" });

export const LookupExclusion = z
  .union([
    z.object({
      kind: z.literal("module"),
      module_id: Uuid,
      module_name: z.string(),
      prefix: z.string().describe("The exclude module's prefix that holds the address."),
    }),
    z.object({
      kind: z.literal("tenant_exclusion"),
      prefix: z.string().describe("The `BIRD.exclude_prefixes` entry (or its default) that holds the address."),
    }),
    z.object({
      kind: z.literal("min_prefix_length"),
      prefix: z.string().describe("A collected prefix shorter than `BIRD.min_prefix_length_v4`/`_v6`, dropped whole."),
    }),
  ])
  .meta({ id: "LookupExclusion", description: "One rule that cut the address out of what the tenant announces." });
export type LookupExclusion = z.infer<typeof LookupExclusion>;

export const LookupResult = z
  .object({
    query: z.string(),
    kind: z.enum(["ip", "domain"]),
    normalized: z.string(),
    matched: z.boolean(),
    matches: z.array(LookupMatch),
    revision: z.object({ revision_id: z.number().int(), prefix: z.string(), communities: z.array(z.string()) }).nullable(),
    announced: z
      .boolean()
      .nullable()
      .describe("Whether the current revision announces a prefix that contains the address; null for a domain (look up its addresses)."),
    announced_prefix: z.string().nullable().describe("The longest announced prefix that contains the address."),
    communities: z.array(z.string()).describe("The communities `announced_prefix` carries."),
    excluded_by: z
      .array(LookupExclusion)
      .describe(
        "When an enabled module collected the address but it is not announced: the exclude modules, tenant exclusions and bogon rules that cut it out.",
      ),
    answer: z
      .string()
      .describe('The answer in one line: "announced as 1.2.3.0/24 with 65000:100 — from modules A, B" or "not announced: excluded by module X".'),
  })
  .meta({ id: "LookupResult" });
