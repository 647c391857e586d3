import { z } from "zod";

/** RFC 3339 UTC with milliseconds, as every timestamp of the API is written. */
export const Timestamp = z.string().meta({ format: "date-time", example: "2026-11-22T10:00:00.000Z" });

export const Uuid = z.uuid();

/** When a stored resource was made and last changed; resources list them last. */
export const timestamps = { created_at: Timestamp, updated_at: Timestamp };

/** Path parameter `{id}` of a UUID resource: anything else is a 400, never a database error. */
export const IdParams = z.strictObject({ id: Uuid });

export const Role = z.enum(["viewer", "operator", "admin", "superadmin"]).meta({
  id: "Role",
  description: "Roles, lowest first. `node` keys exist apart from this order and are issued by enrollment.",
});
export const AnyRole = z.enum(["viewer", "operator", "admin", "superadmin", "node"]);

export const Cursor = z.string().min(1).max(1024).describe("Opaque cursor from a previous page's `next_cursor`.");
export const Limit = z.coerce.number().int().min(1).max(500).default(50).describe("Page size, 1..500 (default 50).");

/** Query members every collection accepts; collections extend it with their filters. */
export const ListQueryShape = { cursor: Cursor.optional(), limit: Limit };
export const ListQuery = z.strictObject(ListQueryShape);

/** A collection's query: the paging members, then the collection's own filters. */
export function listQuery<F extends Record<string, z.ZodType> = Record<never, never>>(filters: F = {} as F) {
  return z.strictObject({ ...ListQueryShape, ...filters });
}

/** `true`/`false` in a query string. */
export const QueryBoolean = z.enum(["true", "false"]).transform((v) => v === "true");

/** A `true`/`false` switch in a query string that is off when left out. */
export const queryFlag = () =>
  z
    .enum(["true", "false"])
    .default("false")
    .transform((v) => v === "true");

/**
 * The members of an update body: each writable field, optional, since an update changes only what
 * it names. A create body spreads the same and then names what it requires or defaults; a member
 * named again keeps its place, so the API document lists the members in the fields' order.
 */
export function optionalFields<S extends Record<string, z.ZodType>>(fields: S): { [K in keyof S]: z.ZodOptional<S[K]> } {
  return Object.fromEntries(Object.entries(fields).map(([name, field]) => [name, field.optional()])) as { [K in keyof S]: z.ZodOptional<S[K]> };
}

export function page<T extends z.ZodType>(item: T) {
  return z.object({
    items: z.array(item),
    next_cursor: z.string().nullable(),
    has_more: z.boolean(),
  });
}

export const FieldError = z.object({ path: z.string(), message: z.string() });

export const Problem = z
  .looseObject({
    type: z.string(),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string(),
    instance: z.string().optional(),
    request_id: z.string().optional(),
    errors: z.array(FieldError).optional(),
  })
  .meta({ id: "Problem", description: "RFC 9457 problem details; `code` is stable and `type` ends with it." });

export const Empty = z.undefined().describe("No content");

/** A body that may be left out: Fastify hands a missing body to validation as null. */
export function optionalBody<T extends z.ZodType>(schema: T) {
  return z.preprocess((v) => (v === null || v === undefined ? {} : v), schema);
}
