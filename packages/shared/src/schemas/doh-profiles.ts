import { z } from "zod";
import { listQuery, optionalFields, timestamps, Uuid } from "./common.js";
import { nonEmptyText, storableText } from "./text.js";

export const DohMethod = z.enum(["GET", "POST"]);
export const DohFormat = z
  .enum(["wire", "json"])
  .describe("`wire`: RFC 8484 `application/dns-message` (GET `?dns=` or POST); `json`: the `application/dns-json` API (GET `?name=&type=`).");

export const DohProfile = z
  .object({
    id: Uuid,
    name: z.string().nullable(),
    url: z.string(),
    method: DohMethod,
    format: DohFormat,
    timeout_ms: z.number().int(),
    headers: z
      .record(z.string(), z.string())
      .describe("The extra request headers by name; every value reads `********` (values are kept sealed and sent only with the queries)."),
    ...timestamps,
  })
  .meta({ id: "DohProfile" });
export type DohProfile = z.infer<typeof DohProfile>;

const HeaderName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/, "must be an HTTP header name");
const HeaderValue = z
  .string()
  .max(1024)
  .regex(/^[^\r\n\0]*$/, "must not contain CR, LF or NUL");
const Headers = z
  .record(HeaderName, HeaderValue)
  .refine((h) => Object.keys(h).length <= 32, "at most 32 headers")
  .describe(
    "Extra request headers (e.g. an API token), sent with every query; values are stored sealed and read back as `********`. " +
      "In an update, `********` as a value keeps that header's stored value. The values are bound to the URL's origin (scheme, host, port): " +
      "an update that moves `url` to another origin drops every stored value it does not send again (without `headers`, all of them), " +
      "and `********` is then refused with 400, as there is no value for the new origin to keep.",
  );
const profileFields = {
  name: storableText().trim().min(1).max(64).nullable().describe("Optional display name, unique in the tenant."),
  url: nonEmptyText(2048)
    .describe("`https`, or plain `http` only to an address allowed by `APP_OUTBOUND_ALLOW_CIDRS`.")
    .meta({ example: "https://cloudflare-dns.com/dns-query" }),
  method: DohMethod,
  format: DohFormat,
  timeout_ms: z.number().int().min(100).max(30000),
  headers: Headers,
};

export const CreateDohProfileBody = z.strictObject({
  ...optionalFields(profileFields),
  url: profileFields.url,
  method: DohMethod.optional().describe("Default GET."),
  format: DohFormat.optional().describe("Default wire."),
  timeout_ms: profileFields.timeout_ms.optional().describe("Default 3000."),
});
export type CreateDohProfileBody = z.infer<typeof CreateDohProfileBody>;

export const UpdateDohProfileBody = z.strictObject(optionalFields(profileFields));
export type UpdateDohProfileBody = z.infer<typeof UpdateDohProfileBody>;

export const DohProfileListQuery = listQuery();
