import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { jsonSchemaTransform, jsonSchemaTransformObject } from "fastify-type-provider-zod";
import { asyncApiDocument } from "../events/asyncapi.js";
import { accessExtensions, accessOf, accessSentence } from "./access.js";
import { collectBodyLimits } from "./body-limits.js";

type TransformInput = Parameters<typeof jsonSchemaTransform>[0];

/** The stable `operationId` of a route (its method, its Fastify path), from the route table `app.ts` registers. */
export type OperationIdOf = (method: string, fastifyUrl: string) => string | undefined;

/**
 * The zod transform, then the operation's stable `operationId` (from the route table, so route
 * files need not carry it) and who may call it: `x-min-role` and a sentence in the description.
 */
const transformWith = (operationIdOf: OperationIdOf) => (doc: TransformInput) => {
  const out = jsonSchemaTransform(doc) as { schema: Record<string, unknown>; url: string };
  const route = (doc as { route?: { config?: Parameters<typeof accessOf>[0]; method: string | string[] } }).route;
  if (!route || out.schema?.hide) return out;
  const access = accessOf(route.config, route.method);
  const description = typeof out.schema.description === "string" ? `${out.schema.description}\n\n` : "";
  const method = Array.isArray(route.method) ? route.method.filter((m) => m !== "HEAD")[0] : route.method;
  const operationId = method ? operationIdOf(method, out.url) : undefined;
  return {
    ...out,
    schema: {
      ...out.schema,
      ...(operationId ? { operationId } : {}),
      ...accessExtensions(access),
      description: `${description}${accessSentence(access)}`,
    },
  };
};

/**
 * The document without the schemas no operation reaches. Every zod schema with an `id` is in
 * the registry the transform reads, so the document would also carry the events' payloads
 * (they belong to /v1/asyncapi.json), the `…Input` twin of every response-only schema and
 * pieces only other schemas inline: names a reader and a generated client would take for API.
 */
export function withoutUnusedSchemas<T extends object>(doc: T): T {
  const components = (doc as { components?: { schemas?: Record<string, unknown> } }).components;
  const schemas = components?.schemas;
  if (!schemas) return doc;
  const reached = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) for (const item of node) walk(item);
    else if (node && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "$ref" && typeof value === "string" && value.startsWith("#/components/schemas/")) {
          const name = decodeURIComponent(value.slice("#/components/schemas/".length));
          if (!reached.has(name)) {
            reached.add(name);
            walk(schemas[name]);
          }
        } else walk(value);
      }
    }
  };
  walk({ ...doc, components: { ...components, schemas: {} } });
  const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => reached.has(name)));
  return { ...doc, components: { ...components, schemas: kept } };
}

/** The OpenAPI 3.1 document, generated from the same zod schemas that validate requests. */
export default fp(async function openapiPlugin(app: FastifyInstance, opts: { version: string; operationId: OperationIdOf }) {
  const withBodyLimits = collectBodyLimits(app);
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Route-list controller API",
        version: opts.version,
        license: { name: "Apache-2.0", url: "https://www.apache.org/licenses/LICENSE-2.0" },
        description:
          "Turns lists of ASNs, domains, IP ranges and CDN feeds into community-tagged BGP announcements. " +
          "Errors are RFC 9457 problem+json with a stable `code`. Every POST, PATCH and DELETE accepts `Idempotency-Key`. " +
          "Collections are keyset-paginated with `cursor` and `limit` (1..500, default 50). " +
          "Each operation that takes a body states its size limit in bytes as `x-body-limit` (1 MiB unless stated); a larger body is a 413. " +
          "While the database cannot be reached, every operation that needs it answers 503 `database_unavailable` with `Retry-After` at once.",
      },
      // Relative: the document is served by the controller it describes, on whatever address it
      // was reached, so "Try it out" and generated clients call that same controller.
      servers: [{ url: "/", description: "The controller serving this document" }],
      components: {
        securitySchemes: { bearer: { type: "http", scheme: "bearer", description: "`rlk_<prefix>_<secret>`" } },
      },
      security: [{ bearer: [] }],
    },
    transform: transformWith(opts.operationId),
    transformObject: (doc) => withoutUnusedSchemas(withBodyLimits(jsonSchemaTransformObject(doc) as never)),
  });
  // The reference pages are public like the document they show.
  await app.register(async (docs) => {
    docs.addHook("onRoute", (route) => {
      route.config = { ...(route.config ?? {}), auth: "public" };
    });
    await docs.register(swaggerUi, { routePrefix: "/docs", uiConfig: { url: "/v1/openapi.json" } as never });
  });
  app.get("/v1/openapi.json", { schema: { hide: true }, config: { auth: "public" } }, async () => app.swagger());
  // The events' document: subjects and payloads, no secret in it, public like this one.
  const asyncapi = asyncApiDocument({ version: opts.version });
  app.get("/v1/asyncapi.json", { schema: { hide: true }, config: { auth: "public" } }, async () => asyncapi);
});
