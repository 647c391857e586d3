import { randomUUID } from "node:crypto";
import type { ServerOptions } from "node:http";
import cors from "@fastify/cors";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { type Config, corsOrigins } from "./config.js";
import authPlugin from "./plugins/auth.js";
import consolePlugin, { consoleBuilt, consoleDir } from "./plugins/console.js";
import errorsPlugin, { clientErrorHandler, frameworkErrors } from "./plugins/errors.js";
import idempotencyPlugin from "./plugins/idempotency.js";
import lookupInvalidationPlugin from "./plugins/lookup-invalidation.js";
import metricsPlugin from "./plugins/metrics.js";
import openapiPlugin from "./plugins/openapi.js";
import securityHeadersPlugin from "./plugins/security-headers.js";
import strictRequestsPlugin from "./plugins/strict-requests.js";
import writeBatchingPlugin from "./plugins/write-batching.js";
import "./plugins/types.js";
import type { AppDeps } from "./app-deps.js";
import { operationIds, operationKey, registerRoutes } from "./routes/table.js";

const REQUEST_ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Fastify leaves the request timeout off and Node checks its timeouts every 30 s; a client that
 * announced 100 kB and sent 1 byte kept its socket for as long as it liked. The idle timeout
 * must outlast the longest answer a handler waits for (`?wait=true`, 60 s).
 */
export function httpTimeouts(config: Config): Pick<FastifyServerOptions, "requestTimeout" | "connectionTimeout" | "keepAliveTimeout"> & {
  http: ServerOptions;
} {
  const headersTimeout = Math.min(config.HTTP_HEADERS_TIMEOUT_MS, config.HTTP_REQUEST_TIMEOUT_MS);
  return {
    requestTimeout: config.HTTP_REQUEST_TIMEOUT_MS,
    connectionTimeout: config.HTTP_IDLE_TIMEOUT_MS,
    keepAliveTimeout: config.HTTP_KEEPALIVE_TIMEOUT_MS,
    http: { headersTimeout, connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(headersTimeout / 2))) },
  };
}

export function loggerOptions(level: string): FastifyServerOptions["logger"] {
  return {
    level,
    redact: {
      paths: ["req.headers.authorization", "req.headers.cookie", "headers.authorization", "*.secret", "*.password", "*.api_key"],
      censor: "[redacted]",
    },
  };
}

/** Builds the HTTP app: plugins, then routes. The same app serves production and the tests. */
export async function buildApp(deps: AppDeps, opts: { logger?: FastifyServerOptions["logger"] } = {}): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger ?? loggerOptions(deps.config.LOG_LEVEL),
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      // randomUUID draws from a cached entropy pool: uuidv7's randomBytes per request cost ~8% CPU
      // on the lookup bench. Request ids need uniqueness, not time order.
      return typeof given === "string" && REQUEST_ID_RE.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    bodyLimit: 1024 * 1024,
    ...httpTimeouts(deps.config),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 200 },
    frameworkErrors,
    clientErrorHandler,
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addContentTypeParser("application/merge-patch+json", { parseAs: "string" }, app.getDefaultJsonParser("error", "error"));

  await app.register(errorsPlugin, { databaseHealth: deps.databaseHealth });
  await app.register(strictRequestsPlugin);
  const origins = corsOrigins(deps.config);
  if (origins.length) {
    await app.register(cors, {
      origin: origins,
      exposedHeaders: ["x-request-id", "idempotent-replayed", "location", "retry-after"],
      allowedHeaders: ["authorization", "content-type", "idempotency-key", "x-request-id", "x-tenant-id"],
      methods: ["GET", "POST", "PATCH", "DELETE"],
    });
  }
  await app.register(securityHeadersPlugin);
  // After the headers' hook: an answer is queued once it is complete.
  await app.register(writeBatchingPlugin);
  // The document's plugin first: it sees only routes added after it (/metrics is one).
  await app.register(openapiPlugin, { version: deps.buildInfo.version, operationId: (method, url) => operationIds[operationKey(method, url)] });
  // With METRICS_PORT, /metrics is that listener's (metrics-listener.ts); requests are counted here still.
  await app.register(metricsPlugin, { registry: deps.metrics.registry, serve: deps.config.METRICS_PORT === undefined });
  await app.register(authPlugin, { sql: deps.sql, clock: deps.clock, authenticator: deps.services.authenticator, databaseHealth: deps.databaseHealth });
  await app.register(idempotencyPlugin, { sql: deps.sql, clock: deps.clock, secretBox: deps.services.secretBox });
  await app.register(lookupInvalidationPlugin, { bus: deps.bus, invalidate: deps.services.lookup.invalidate });

  await registerRoutes(app, deps);
  if (deps.config.APP_CONSOLE) {
    const dir = consoleDir(deps.config.APP_CONSOLE_DIR);
    if (consoleBuilt(dir)) await app.register(consolePlugin, { dir });
    else app.log.warn({ dir }, "the console is not built (npm run build): / and /console/ are not served");
  }
  return app;
}
