import { z } from "zod";
import { ListQueryShape, optionalBody, Timestamp, Uuid } from "./common.js";
import { storableText } from "./text.js";

export const CdnFormat = z.enum(["text", "json"]).describe("`text`: one prefix per line, `#`/`;` comments; `json`: values picked by `json_path`.");

export const CdnSource = z
  .object({
    id: Uuid,
    module_id: Uuid,
    url: z.string(),
    format: CdnFormat,
    json_path: z.string().nullable(),
    enabled: z.boolean(),
    allow_empty: z.boolean(),
    last_refreshed_at: Timestamp.nullable(),
    last_error: z.string().nullable(),
    last_prefix_count: z.number().int().nullable().describe("Distinct prefixes of the last good fetch, counted as preview counts."),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .meta({ id: "CdnSource" });

const SourceUrl = z
  .string()
  .min(1)
  .max(2048)
  .describe("http or https, no credentials; literal private, loopback, link-local and metadata addresses are refused unless allowed.")
  .meta({ example: "https://ip-ranges.amazonaws.com/ip-ranges.json" });
const JsonPath = storableText()
  .max(512)
  .nullable()
  .describe("Required for `json`, absent for `text`. Dot-separated keys, `[*]`, `[N]`, `?key=value` after `[*]`.")
  .meta({ example: "prefixes[*]?service=CLOUDFRONT.ip_prefix" });

export const CreateCdnSourceBody = z.strictObject({
  url: SourceUrl,
  format: CdnFormat.optional().describe("Default text."),
  json_path: JsonPath.optional(),
  enabled: z.boolean().optional().describe("Default true."),
  allow_empty: z.boolean().optional().describe("Default false: a fetch that parses to no prefix counts as failed."),
});

export const UpdateCdnSourceBody = z.strictObject({
  url: SourceUrl.optional(),
  format: CdnFormat.optional(),
  json_path: JsonPath.optional(),
  enabled: z.boolean().optional(),
  allow_empty: z.boolean().optional(),
});

export const CdnPreviewBody = z.strictObject({
  url: SourceUrl,
  format: CdnFormat.optional().describe("Default text."),
  json_path: JsonPath.optional(),
});

export const CdnPreview = z
  .object({
    url: z.string(),
    fetched_bytes: z.number().int(),
    duration_ms: z.number().int(),
    prefix_count_v4: z.number().int(),
    prefix_count_v6: z.number().int(),
    masked: z.number().int().describe("Values whose host bits were set (masked, not rejected)."),
    rejected: z.number().int().describe("Values that are not an address or a CIDR."),
    sample: z.array(z.string()).describe("The first 100 distinct prefixes."),
    rejected_sample: z.array(z.object({ value: z.string(), reason: z.string() })).describe("The first 20 rejected values."),
  })
  .meta({ id: "CdnPreview", description: "Counts of distinct prefixes after masking, before aggregation and bogon filtering." });

export const CdnSourceListQuery = z.strictObject(ListQueryShape);

export const ModuleSourceParams = z.strictObject({ module_id: Uuid, source_id: Uuid });

export type CdnSource = z.infer<typeof CdnSource>;
export type CreateCdnSourceBody = z.infer<typeof CreateCdnSourceBody>;
export type UpdateCdnSourceBody = z.infer<typeof UpdateCdnSourceBody>;
export type CdnPreviewBody = z.infer<typeof CdnPreviewBody>;
export type CdnPreview = z.infer<typeof CdnPreview>;

/** The preview of a saved source takes no body (an empty object is accepted). */
export const CdnSavedPreviewBody = optionalBody(z.strictObject({}));
