import { z } from "zod";
import { listQuery, optionalBody, queryFlag, Timestamp, Uuid } from "./common.js";

export const RevisionId = z.coerce.number().int().min(1).max(2147483647);

export const Revision = z
  .object({
    revision_id: z.number().int(),
    created_at: Timestamp,
    created_by: z.string().nullable(),
    reason: z.enum(["ingest", "rollback"]),
    rolled_back_from: z.number().int().nullable(),
    digest: z
      .string()
      .describe(
        "`sha256:<hex>` of what routers receive from the revision (each announced prefix and its communities; not the modules). The lines `prefix communities\\n` (communities joined by commas), IPv4 then IPv6 in address order, are grouped by the address's top 12 bits (IPv4) or 20 bits (IPv6); the digest is the SHA-256 of the groups' records one after another (IPv4 groups, then IPv6 ones, in address order), a record being the family (one byte, 4 or 6), the group's top bits (32-bit big-endian) and the SHA-256 of the group's lines. Revisions stored by a controller older than this scheme (before migration 0031) keep the SHA-256 of the lines themselves; a refresh compares with such a revision by that digest. Two revisions of the same content stored since then have the same digest; a rollback keeps the digest of the revision it copies.",
      ),
    prefix_count_v4: z.number().int(),
    prefix_count_v6: z.number().int(),
    input_prefix_count: z.number().int(),
    dropped_prefix_count: z.number().int(),
    modules: z.array(
      z.object({
        module_id: Uuid,
        name: z.string(),
        community: z.string().nullable(),
        rpki_dropped: z.number().int().optional().describe("RPKI-invalid prefixes `rpki_policy: drop_invalid` left out; absent for a module not validated."),
        prefix_count: z.number().int().describe("Announced prefixes the module is attributed to; 0 for an exclude module."),
        action: z.enum(["announce", "exclude"]),
        excluded_prefix_count: z
          .number()
          .int()
          .describe(
            "Announce module: its distinct collected prefixes that exclude modules cut or dropped. Exclude module: the announce modules' distinct collected prefixes it cut or dropped.",
          ),
      }),
    ),
    applied_to: z.array(z.object({ speaker_id: Uuid, applied_at: Timestamp })),
    is_current: z.boolean(),
  })
  .meta({ id: "Revision" });

export const RevisionParams = z.strictObject({ revision_id: RevisionId });
export const RevisionDiffParams = z.strictObject({ revision_a: RevisionId, revision_b: RevisionId });

export const RevisionListQuery = listQuery();

export const RevisionPrefixQuery = listQuery({
  family: z.enum(["4", "6"]).transform(Number).optional(),
  community: z.string().min(1).max(64).optional(),
  module_id: Uuid.optional(),
  contains: z.string().min(2).max(64).optional().describe("An IPv4 or IPv6 address: only prefixes containing it."),
});

export const RevisionPrefix = z
  .object({ prefix: z.string(), family: z.union([z.literal(4), z.literal(6)]), communities: z.array(z.string()), module_ids: z.array(Uuid) })
  .meta({ id: "RevisionPrefix" });

export const RevisionPreview = z
  .object({
    revision_id: z.number().int(),
    digest: z.string(),
    prefix_count_v4: z.number().int(),
    prefix_count_v6: z.number().int(),
    by_community: z.array(z.object({ community: z.string().nullable(), title: z.string().nullable(), prefix_count: z.number().int() })),
    bird_version: z
      .string()
      .nullable()
      .describe(
        "The BIRD version the excerpt is rendered for: the one the speaker last reported (`2.0.12`, `3.1.8`), as its agent renders for it. " +
          "Null without `speaker_id`, or when the speaker has not reported one: the excerpt is then what every supported version accepts (BIRD 2.0's).",
      ),
    bird_config_excerpt: z.string(),
  })
  .meta({ id: "RevisionPreview" });

export const RevisionDiffQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(100000).default(1000) });

const Tagged = z.object({ prefix: z.string(), communities: z.array(z.string()) });
export const RevisionDiff = z
  .object({
    from: z.number().int(),
    to: z.number().int(),
    added: z.array(Tagged),
    removed: z.array(Tagged),
    changed: z.array(z.object({ prefix: z.string(), from_communities: z.array(z.string()), to_communities: z.array(z.string()) })),
    added_count: z.number().int(),
    removed_count: z.number().int(),
    changed_count: z.number().int(),
    truncated: z.boolean(),
  })
  .meta({ id: "RevisionDiff" });

export const RollbackBody = optionalBody(z.strictObject({ apply: z.boolean().optional() }));

export const RevisionPruneEstimate = z
  .object({
    retention_minutes: z.number().int(),
    cutoff: Timestamp.nullable(),
    candidate_count: z.number().int(),
    candidate_revision_ids: z.array(z.number().int()),
    kept_count: z.number().int(),
    kept_reasons: z.object({ current: z.number().int(), applied: z.number().int(), within_retention: z.number().int() }),
  })
  .meta({ id: "RevisionPruneEstimate" });

export const RevisionPruneBody = optionalBody(z.strictObject({ dry_run: z.boolean().optional() }));

export const RevisionPruneResult = z
  .object({
    deleted_count: z.number().int().meta({ description: "Revisions deleted; with `dry_run`, the number that would be deleted." }),
    deleted_revision_ids: z.array(z.number().int()),
    kept_count: z.number().int(),
    dry_run: z.boolean(),
  })
  .meta({ id: "RevisionPruneResult" });

export const RefreshBody = optionalBody(
  z.strictObject({
    force: z.boolean().optional(),
    dry_run: z
      .boolean()
      .optional()
      .describe(
        "Enqueue nothing: answer 200 with what RPKI origin validation of the current snapshot finds and what `rpki_policy: drop_invalid` would drop (RpkiDryRun).",
      ),
  }),
);
export const RefreshQuery = z.strictObject({ wait: queryFlag() });
export const JobAccepted = z.object({ job_id: Uuid, type: z.string(), status: z.string() }).meta({ id: "JobAccepted" });
