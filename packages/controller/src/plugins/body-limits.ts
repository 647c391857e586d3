import type { FastifyInstance } from "fastify";

const WITH_BODY = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Remembers every route's body limit as it is registered, so the OpenAPI document can state it
 * (`x-body-limit`, bytes) next to the operation instead of in prose that drifts from the code.
 */
export function collectBodyLimits(app: FastifyInstance): (doc: OpenApiDocument) => OpenApiDocument {
  const limits = new Map<string, number>();
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (WITH_BODY.has(method)) limits.set(`${method.toLowerCase()} ${openapiPath(route.url)}`, route.bodyLimit ?? app.initialConfig.bodyLimit ?? 1024 * 1024);
    }
  });
  return (doc) => {
    for (const [path, operations] of Object.entries(doc.paths ?? {})) {
      for (const [method, operation] of Object.entries(operations)) {
        const limit = limits.get(`${method} ${path}`);
        if (limit !== undefined && operation && typeof operation === "object") (operation as Record<string, unknown>)["x-body-limit"] = limit;
      }
    }
    return doc;
  };
}

interface OpenApiDocument {
  paths?: Record<string, Record<string, unknown>>;
}

/** `/v1/modules/:module_id` → `/v1/modules/{module_id}`, as @fastify/swagger writes paths. */
function openapiPath(url: string): string {
  return url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}
