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

export const LookupResult = z
  .object({
    query: z.string(),
    kind: z.enum(["ip", "domain"]),
    normalized: z.string(),
    matched: z.boolean(),
    matches: z.array(LookupMatch),
    revision: z.object({ revision_id: z.number().int(), prefix: z.string(), communities: z.array(z.string()) }).nullable(),
  })
  .meta({ id: "LookupResult" });
