import { z } from "zod";
import { listQuery, optionalFields, timestamps, Uuid } from "./common.js";
import { nonEmptyText, storableText } from "./text.js";

// Shapes only: the normalisation rules (ASN forms, IDN, canonical CIDR) live in the controller,
// which applies the same functions to JSON bodies and CSV rows.

const Comment = storableText().max(256);

const entryShape = {
  id: Uuid,
  module_id: Uuid,
  comment: z.string(),
  ...timestamps,
};

export const AsEntry = z
  .object({
    ...entryShape,
    asn: z.number().int().min(1).max(4294967295).nullable().describe("The ASN, or null when the entry names an AS-SET."),
    as_set: z
      .string()
      .nullable()
      .describe("The AS-SET, expanded through the IRR server (`IRR_SOURCE`) at each refresh, or null when the entry holds an ASN.")
      .meta({ example: "AS-EXAMPLE" }),
  })
  .describe("Exactly one of `asn` and `as_set` is set.")
  .meta({ id: "AsEntry" });
export type AsEntry = z.infer<typeof AsEntry>;

export const DomainEntry = z.object({ ...entryShape, domain: z.string(), include_subdomains: z.boolean() }).meta({ id: "DomainEntry" });
export type DomainEntry = z.infer<typeof DomainEntry>;

export const IpRangeEntry = z.object({ ...entryShape, cidr: z.string() }).meta({ id: "IpRangeEntry" });
export type IpRangeEntry = z.infer<typeof IpRangeEntry>;

export const CountryEntry = z
  .object({ ...entryShape, country: z.string().describe("ISO 3166-1 alpha-2, upper case.").meta({ example: "NL" }) })
  .meta({ id: "CountryEntry" });
export type CountryEntry = z.infer<typeof CountryEntry>;

export const AsnInput = z
  .union([z.number().int(), z.string().max(16)])
  .describe("1..4294967295, as a number or as text (`13335`, `AS13335`, `as13335`); stored as a number.")
  .meta({ example: 13335 });

/** An AS entry holds an ASN or an AS-SET, never prefixes. A `prefix` member is refused with this message, not as an unknown key. */
const RemovedPrefix = z
  .never({ error: "prefix was removed: an AS entry holds an ASN or an AS-SET, whose prefixes come from the ASN source" })
  .optional()
  .describe("Removed: an AS entry holds an ASN or an AS-SET, so sending it is a 400.");

export const AsSetInput = nonEmptyText(255)
  .describe(
    "An AS-SET name (`AS-EXAMPLE`, hierarchical `AS64500:AS-CUSTOMERS`), optionally pinned to one IRR source (`RIPE::AS-EXAMPLE`); stored upper case. Its members are expanded through the IRR server at each refresh and each member ASN's prefixes come from the ASN source.",
  )
  .meta({ example: "AS-EXAMPLE" });

export const CreateAsEntryBody = z
  .strictObject({ asn: AsnInput.optional(), as_set: AsSetInput.optional(), comment: Comment.optional(), prefix: RemovedPrefix })
  .describe("Exactly one of `asn` and `as_set`.");
export type CreateAsEntryBody = z.infer<typeof CreateAsEntryBody>;
export const UpdateAsEntryBody = z
  .strictObject({ asn: AsnInput.optional(), as_set: AsSetInput.optional(), comment: Comment.optional(), prefix: RemovedPrefix })
  .describe("At most one of `asn` and `as_set`: giving one turns the entry into that kind.");
export type UpdateAsEntryBody = z.infer<typeof UpdateAsEntryBody>;

const domainFields = {
  domain: nonEmptyText(1024)
    .describe("Lower-cased, trailing dot removed, IDN to punycode; labels 1..63 (letters, digits, hyphens), name ≤ 253, at least two labels.")
    .meta({ example: "bücher.example" }),
  include_subdomains: z.boolean(),
  comment: Comment,
};

export const CreateDomainEntryBody = z.strictObject({
  ...optionalFields(domainFields),
  domain: domainFields.domain,
  include_subdomains: z.boolean().optional().describe("Default false."),
});
export type CreateDomainEntryBody = z.infer<typeof CreateDomainEntryBody>;
export const UpdateDomainEntryBody = z.strictObject(optionalFields(domainFields));
export type UpdateDomainEntryBody = z.infer<typeof UpdateDomainEntryBody>;

/** The bodies of an entry of one field and a comment: a create names the field, an update either or neither. */
function oneFieldBodies<K extends string, F extends z.ZodType>(key: K, field: F) {
  const fields = { [key]: field, comment: Comment } as { [P in K]: F } & { comment: typeof Comment };
  return { create: z.strictObject({ ...fields, comment: Comment.optional() }), update: z.strictObject(optionalFields(fields)) };
}

const CidrInput = nonEmptyText(128)
  .describe("IPv4 or IPv6 CIDR; a bare address is a /32 or /128; host bits set is a 400 naming the network. Stored canonical.")
  .meta({ example: "2001:db8::/32" });

const CountryInput = nonEmptyText(16)
  .describe("ISO 3166-1 alpha-2 (`NL`, `nl`); stored upper case. Anything else (`NLD`, `N1`, `XX`) is a 400.")
  .meta({ example: "NL" });

const ipRange = oneFieldBodies("cidr", CidrInput);
const country = oneFieldBodies("country", CountryInput);
export const CreateIpRangeEntryBody = ipRange.create;
export type CreateIpRangeEntryBody = z.infer<typeof CreateIpRangeEntryBody>;
export const UpdateIpRangeEntryBody = ipRange.update;
export type UpdateIpRangeEntryBody = z.infer<typeof UpdateIpRangeEntryBody>;
export const CreateCountryEntryBody = country.create;
export type CreateCountryEntryBody = z.infer<typeof CreateCountryEntryBody>;
export const UpdateCountryEntryBody = country.update;
export type UpdateCountryEntryBody = z.infer<typeof UpdateCountryEntryBody>;

export const EntryListQuery = listQuery();

export const ModuleEntryParams = z.strictObject({ module_id: Uuid, entry_id: Uuid });

export const CsvImportQuery = z.strictObject({
  mode: z.enum(["merge", "replace"]).optional().describe("`merge` (default) adds and updates; `replace` makes the entries exactly the file's."),
  dry_run: z
    .enum(["true", "false"])
    .optional()
    .transform((v) => v === "true")
    .describe("Count what would change, change nothing."),
});

export const CsvRowError = z.object({
  path: z.string(),
  line: z.number().int().describe("Line of the row's start; the header is line 1."),
  value: z.string(),
  message: z.string(),
});
export type CsvRowError = z.infer<typeof CsvRowError>;

export const CsvImportResult = z
  .object({
    created: z.number().int(),
    updated: z.number().int(),
    deleted: z.number().int(),
    unchanged: z.number().int(),
    errors: z.array(CsvRowError),
  })
  .meta({ id: "CsvImportResult" });
export type CsvImportResult = z.infer<typeof CsvImportResult>;
