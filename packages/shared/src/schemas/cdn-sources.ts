import { z } from "zod";
import { listQuery, optionalBody, optionalFields, Timestamp, timestamps, Uuid } from "./common.js";
import { nonEmptyText, storableText } from "./text.js";

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
    ...timestamps,
  })
  .meta({ id: "CdnSource" });
export type CdnSource = z.infer<typeof CdnSource>;

const SourceUrl = nonEmptyText(2048)
  .describe("http or https, no credentials; literal private, loopback, link-local and metadata addresses are refused unless allowed.")
  .meta({ example: "https://ip-ranges.amazonaws.com/ip-ranges.json" });
const JsonPath = storableText()
  .max(512)
  .nullable()
  .describe("Required for `json`, absent for `text`. Dot-separated keys, `[*]`, `[N]`, `?key=value` after `[*]`.")
  .meta({ example: "prefixes[*]?service=CLOUDFRONT.ip_prefix" });

const sourceFields = { url: SourceUrl, format: CdnFormat, json_path: JsonPath, enabled: z.boolean(), allow_empty: z.boolean() };

export const CreateCdnSourceBody = z.strictObject({
  ...optionalFields(sourceFields),
  url: SourceUrl,
  format: CdnFormat.optional().describe("Default text."),
  enabled: z.boolean().optional().describe("Default true."),
  allow_empty: z.boolean().optional().describe("Default false: a fetch that parses to no prefix counts as failed."),
});
export type CreateCdnSourceBody = z.infer<typeof CreateCdnSourceBody>;

export const UpdateCdnSourceBody = z.strictObject(optionalFields(sourceFields));
export type UpdateCdnSourceBody = z.infer<typeof UpdateCdnSourceBody>;

/** What a preview of a source not saved yet needs: how to fetch and read it. */
export const CdnPreviewBody = CreateCdnSourceBody.pick({ url: true, format: true, json_path: true });
export type CdnPreviewBody = z.infer<typeof CdnPreviewBody>;

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
export type CdnPreview = z.infer<typeof CdnPreview>;

export const CdnSourceListQuery = listQuery();

export const ModuleSourceParams = z.strictObject({ module_id: Uuid, source_id: Uuid });

/** The preview of a saved source takes no body (an empty object is accepted). */
export const CdnSavedPreviewBody = optionalBody(z.strictObject({}));
