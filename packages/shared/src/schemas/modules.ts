import { z } from "zod";
import { listQuery, optionalFields, QueryBoolean, Timestamp, timestamps, Uuid } from "./common.js";
import { nameText, storableText } from "./text.js";

export const ModuleType = z.enum(["AS_PREFIXES", "DOMAINS", "IP_RANGES", "COUNTRY"]).meta({
  id: "ModuleType",
  description: "Fixed when the module is created.",
});
export type ModuleType = z.infer<typeof ModuleType>;

export const RpkiPolicy = z.enum(["off", "report", "drop_invalid"]).meta({
  id: "RpkiPolicy",
  description:
    "RPKI origin validation (RFC 6811) of the prefixes of the module's AS entries (ASNs and AS-SET members) against `RPKI_VRP_SOURCE`: `off` validates nothing; `report` counts valid, invalid and not-found prefixes and names the invalid ones in the refresh's warnings, keeping them; `drop_invalid` also leaves the invalid ones out of the revision (never the not-found ones). While validation is unavailable (no document, or one older than `RPKI_MAX_AGE_HOURS`) nothing is dropped.",
});
export type RpkiPolicy = z.infer<typeof RpkiPolicy>;

export const ModuleAction = z.enum(["announce", "exclude"]).meta({
  id: "ModuleAction",
  description:
    '`announce`: the module\'s prefixes are announced with its community. `exclude` ("never steer"): its prefixes are cut out of every prefix the tenant announces, the rest kept as the fewest CIDRs around the hole, as `BIRD.exclude_prefixes` does; its community is not used.',
});
export type ModuleAction = z.infer<typeof ModuleAction>;

export const MaxStaleHours = z.union([z.number().int().min(1).max(87600), z.null(), z.literal("tenant")]).meta({
  id: "MaxStaleHours",
  description:
    "Hours the last good records of a source that fails (a CDN feed, an ASN, an AS-SET, a country, a domain) are kept after its last success; at the first refresh past them they are dropped, with a warning `stale:<source>` and the module's `sources_stale` count in the job result. `null`: kept forever. `\"tenant\"`: the tenant's setting `source_max_stale_hours` (hours; 0 keeps forever; 168 when unset).",
});
export type MaxStaleHours = z.infer<typeof MaxStaleHours>;

/** Policy defaults; a policy written in part is completed with these. */
export const DOH_RESOLVER_POLICY_DEFAULTS = {
  strategy: "failover",
  record_types: ["A", "AAAA"],
  timeout_ms: 3000,
  attempts: 2,
  keep_previous_minutes: 1440,
} as const;

const RecordTypes = z
  .array(z.enum(["A", "AAAA"]))
  .min(1)
  .max(2)
  .refine((v) => new Set(v).size === v.length, "record types must not repeat");

const policyShape = {
  strategy: z
    .enum(["failover", "race", "union"])
    .describe("`failover`: ask the profiles in order, first success wins; `race`: ask all, first success wins; `union`: ask all, union of answers."),
  record_types: RecordTypes,
  timeout_ms: z.number().int().min(100).max(30000),
  attempts: z.number().int().min(1).max(5).describe("Attempts per profile."),
  keep_previous_minutes: z
    .number()
    .int()
    .min(0)
    .max(43200)
    .describe("An address a domain resolved to stays in the snapshot this long after the refresh that last saw it."),
};

export const DohResolverPolicy = z.object(policyShape).meta({ id: "DohResolverPolicy" });
export type DohResolverPolicy = z.infer<typeof DohResolverPolicy>;

/** What a client writes: any subset; missing members keep their value (PATCH) or the default (create). */
export const DohResolverPolicyInput = z.strictObject(optionalFields(policyShape)).meta({
  id: "DohResolverPolicyWrite",
  description: "Defaults: failover, [A, AAAA], 3000 ms, 2 attempts, 1440 minutes. Only on DOMAINS modules.",
});
export type DohResolverPolicyInput = z.infer<typeof DohResolverPolicyInput>;

export const ModuleSnapshot = z
  .object({
    prefix_count_v4: z.number().int(),
    prefix_count_v6: z.number().int(),
    collected_at: Timestamp.nullable(),
  })
  .meta({ id: "ModuleSnapshot", description: "Counts of the module's current snapshot (written by refresh)." });

export const Module = z
  .object({
    id: Uuid,
    name: z.string(),
    type: ModuleType,
    description: z.string(),
    enabled: z.boolean(),
    rpki_policy: RpkiPolicy,
    action: ModuleAction,
    community_id: Uuid.nullable(),
    doh_profile_id: Uuid.nullable().describe("Legacy single form: `doh_profile_ids[0]` or null."),
    doh_profile_ids: z.array(Uuid),
    doh_resolver_policy: DohResolverPolicy,
    refresh_interval_minutes: z.number().int().nullable(),
    max_stale_hours: MaxStaleHours,
    last_refreshed_at: Timestamp.nullable(),
    last_refresh_error: z.string().nullable(),
    snapshot: ModuleSnapshot,
    ...timestamps,
  })
  .meta({ id: "Module" });
export type Module = z.infer<typeof Module>;

const ModuleName = nameText(64).meta({ example: "streaming" });
const Description = storableText().max(1024);
const RefreshInterval = z.number().int().min(5).max(10080).nullable().describe("Minutes between scheduled refreshes; null: none.");
const DohProfileIds = z
  .array(Uuid)
  .max(16)
  .nullable()
  .describe("DoH profiles in the order the failover strategy asks them. Only on DOMAINS modules; `[]` and null are allowed on any module.");
const DohProfileId = Uuid.nullable().describe("Legacy: sets `doh_profile_ids` to `[it]`. Writing both with different values is a 400.");

const writableShape = {
  description: Description.optional(),
  enabled: z.boolean().optional(),
  rpki_policy: RpkiPolicy.optional().describe("Default `off`."),
  action: ModuleAction.optional().describe("Default `announce`."),
  community_id: Uuid.nullable().optional(),
  doh_profile_id: DohProfileId.optional(),
  doh_profile_ids: DohProfileIds.optional(),
  doh_resolver_policy: DohResolverPolicyInput.nullable().optional(),
  refresh_interval_minutes: RefreshInterval.optional(),
  max_stale_hours: MaxStaleHours.optional().describe('Default `"tenant"`.'),
};

export const CreateModuleBody = z.strictObject({ name: ModuleName, type: ModuleType, ...writableShape });
export type CreateModuleBody = z.infer<typeof CreateModuleBody>;

export const UpdateModuleBody = z.strictObject({
  name: ModuleName.optional(),
  type: ModuleType.optional().describe("Accepted only when equal to the module's type: the type cannot change."),
  ...writableShape,
});
export type UpdateModuleBody = z.infer<typeof UpdateModuleBody>;

export const ModuleListQuery = listQuery({
  type: ModuleType.optional(),
  enabled: QueryBoolean.optional(),
  q: storableText().min(1).max(64).optional().describe("Name contains (case-insensitive)."),
});
export type ModuleListQuery = z.infer<typeof ModuleListQuery>;

export const ModuleParams = z.strictObject({ module_id: Uuid });
