import { randomUUID } from "node:crypto";
import type { ServerOptions } from "node:http";
import cors from "@fastify/cors";
import Fastify, { type FastifyInstance, type FastifyServerOptions } from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Bus } from "./bus/index.js";
import { type Config, corsOrigins } from "./config.js";
import type { Sql } from "./db/connect.js";
import type { BuildInfo } from "./lib/build-info.js";
import type { SecretBox } from "./lib/secret-box.js";
import type { Clock } from "./lib/time.js";
import authPlugin from "./plugins/auth.js";
import errorsPlugin, { clientErrorHandler, frameworkErrors } from "./plugins/errors.js";
import idempotencyPlugin from "./plugins/idempotency.js";
import metricsPlugin from "./plugins/metrics.js";
import openapiPlugin from "./plugins/openapi.js";
import securityHeadersPlugin from "./plugins/security-headers.js";
import lookupInvalidationPlugin from "./plugins/lookup-invalidation.js";
import strictRequestsPlugin from "./plugins/strict-requests.js";
import "./plugins/types.js";
import publicRoutes from "./routes/public.js";
import apiKeyRoutes from "./routes/v1/api-keys.js";
import birdRoutes from "./routes/v1/bird.js";
import auditRoutes from "./routes/v1/audit.js";
import settingsRoutes from "./routes/v1/settings.js";
import jobRoutes from "./routes/v1/jobs.js";
import nodeRoutes from "./routes/v1/nodes.js";
import peerRoutes from "./routes/v1/peers.js";
import speakerRoutes from "./routes/v1/speakers.js";
import natsRoutes from "./routes/v1/nats.js";
import lookupRoutes from "./routes/v1/lookup.js";
import maintenanceRoutes from "./routes/v1/maintenance.js";
import refreshRoutes from "./routes/v1/refresh.js";
import revisionRoutes from "./routes/v1/revisions.js";
import runtimeLogRoutes from "./routes/v1/runtime-logs.js";
import tenantRoutes from "./routes/v1/tenants.js";
import catalogRoutes from "./routes/v1/catalog.js";
import cdnSourceRoutes from "./routes/v1/cdn-sources.js";
import communityRoutes from "./routes/v1/communities.js";
import csvRoutes from "./routes/v1/csv.js";
import dohProfileRoutes from "./routes/v1/doh-profiles.js";
import entryRoutes from "./routes/v1/entries.js";
import moduleRoutes from "./routes/v1/modules.js";
import { createApiKeyService } from "./services/api-keys.js";
import { type Authenticator, createAuthenticator } from "./services/authenticator.js";
import { type AuditWriter, createAuditWriter } from "./services/audit.js";
import { createJobService } from "./services/jobs.js";
import { createLocalBirdService } from "./services/local-bird.js";
import { createNodeService } from "./services/node.js";
import { createPeerService } from "./services/peers.js";
import { createSigningService } from "./services/signing.js";
import { createSpeakerService } from "./services/speakers.js";
import { createLookupService } from "./services/lookup.js";
import { createMaintenanceService } from "./services/maintenance.js";
import type { RevisionStore } from "./services/revision-store.js";
import { createRevisionService } from "./services/revisions.js";
import { createRuntimeLogService } from "./services/runtime-logs.js";
import { createSettingsService } from "./services/settings.js";
import { createTenantService } from "./services/tenants.js";
import { createCatalogService } from "./services/catalog.js";
import { createCdnSourceService } from "./services/cdn-sources.js";
import { createCommunityService } from "./services/communities.js";
import { createCsvService } from "./services/csv.js";
import { createDohProfileService } from "./services/doh-profiles.js";
import { createEntryService } from "./services/entries.js";
import { createModuleService } from "./services/modules.js";
import { createNatsCredentialService, type NatsCredentialService } from "./services/nats-credentials.js";
import type { NatsCredentialIssuer } from "./bus/nats-auth.js";
import type { OutboundClient } from "./sources/outbound.js";

export interface AppServices {
  audit: AuditWriter;
  authenticator: Authenticator;
  apiKeys: ReturnType<typeof createApiKeyService>;
  tenants: ReturnType<typeof createTenantService>;
  settings: ReturnType<typeof createSettingsService>;
  jobs: ReturnType<typeof createJobService>;
  runtimeLogs: ReturnType<typeof createRuntimeLogService>;
  modules: ReturnType<typeof createModuleService>;
  entries: ReturnType<typeof createEntryService>;
  communities: ReturnType<typeof createCommunityService>;
  dohProfiles: ReturnType<typeof createDohProfileService>;
  cdnSources: ReturnType<typeof createCdnSourceService>;
  csv: ReturnType<typeof createCsvService>;
  catalog: ReturnType<typeof createCatalogService>;
  revisions: ReturnType<typeof createRevisionService>;
  lookup: ReturnType<typeof createLookupService>;
  signing: ReturnType<typeof createSigningService>;
  speakers: ReturnType<typeof createSpeakerService>;
  peers: ReturnType<typeof createPeerService>;
  node: ReturnType<typeof createNodeService>;
  maintenance: ReturnType<typeof createMaintenanceService>;
  localBird: ReturnType<typeof createLocalBirdService>;
  /** NATS users for agents and dashboards (none without NATS_ACCOUNT_SEED_FILE). */
  natsCredentials: NatsCredentialService;
  /** Seals and opens the secrets kept at rest (data key from APP_SECRET_KEY_FILE or APP_DATA_DIR). */
  secretBox: SecretBox;
}

/** Everything the HTTP app needs; tests pass their own clock, database and bus. */
export interface AppDeps {
  config: Config;
  sql: Sql;
  clock: Clock;
  bus: Bus;
  buildInfo: BuildInfo;
  outbound: OutboundClient;
  services: AppServices;
}

/** Speakers, peers, signing and the node side (enrollment, bundles, status reports). */
function deployServices(opts: { config: Config; sql: Sql; bus: Bus; secretBox: SecretBox; natsIssuer?: NatsCredentialIssuer | null; caHash?: string | null | undefined }, audit: AuditWriter, authenticator: Authenticator) {
  const natsCredentials = createNatsCredentialService({ issuer: opts.natsIssuer ?? null, audit });
  const signing = createSigningService({ sql: opts.sql, audit, secrets: opts.secretBox, keyFile: opts.config.BUNDLE_SIGNING_KEY_FILE });
  const grpcHost = opts.config.GRPC_HOST === "0.0.0.0" || opts.config.GRPC_HOST === "::" ? null : opts.config.GRPC_HOST;
  return {
    signing,
    natsCredentials,
    speakers: createSpeakerService({ audit, bus: opts.bus, onKeysChanged: authenticator.invalidate, caHash: opts.caHash ?? null }),
    peers: createPeerService({ audit, bus: opts.bus, secrets: opts.secretBox }),
    node: createNodeService({
      sql: opts.sql,
      bus: opts.bus,
      audit,
      signing,
      secretBox: opts.secretBox,
      // Agents are told an endpoint only when the listener names a host they can reach.
      grpcEndpoint: grpcHost ? `${grpcHost}:${opts.config.GRPC_PORT}` : null,
      natsUrl: opts.config.NATS_URL ?? null,
      natsCredentials,
      onKeysChanged: authenticator.invalidate,
    }),
  };
}

export function createServices(opts: {
  config: Config;
  sql: Sql;
  bus: Bus;
  revisions: RevisionStore;
  pushEnabled: boolean;
  secretBox: SecretBox;
  /** Signs NATS users (NATS_ACCOUNT_SEED_FILE); null = none minted. */
  natsIssuer?: NatsCredentialIssuer | null;
  /** `sha256:<hex>` of the gRPC CA, carried by every enrollment token; null = plaintext gRPC. */
  caHash?: string | null;
  onAuditRecorded?: () => void;
}): AppServices {
  const audit = createAuditWriter({ pushEnabled: opts.pushEnabled, ...(opts.onAuditRecorded ? { onRecorded: opts.onAuditRecorded } : {}) });
  const authenticator = createAuthenticator({ sql: opts.sql });
  const services: Omit<AppServices, "maintenance" | "localBird" | "secretBox"> = {
    audit,
    authenticator,
    apiKeys: createApiKeyService({ audit, onKeysChanged: authenticator.invalidate }),
    tenants: createTenantService({ audit }),
    settings: createSettingsService({ audit }),
    jobs: createJobService({ audit, bus: opts.bus }),
    runtimeLogs: createRuntimeLogService({ config: opts.config, sql: opts.sql }),
    modules: createModuleService({ audit }),
    entries: createEntryService({ audit }),
    communities: createCommunityService({ audit }),
    dohProfiles: createDohProfileService({ audit, secrets: opts.secretBox }),
    cdnSources: createCdnSourceService({ audit }),
    csv: createCsvService({ audit }),
    catalog: createCatalogService(),
    revisions: createRevisionService({ audit, revisions: opts.revisions }),
    lookup: createLookupService({ revisions: opts.revisions, budgetBytes: opts.config.LOOKUP_CACHE_MAX_MB * 1024 * 1024 }),
    ...deployServices(opts, audit, authenticator),
  };
  const maintenance = createMaintenanceService({ sql: opts.sql, audit, revisions: services.revisions, runtimeLogs: services.runtimeLogs });
  const localBird = createLocalBirdService({
    sql: opts.sql,
    audit,
    node: services.node,
    signing: services.signing,
    revisions: opts.revisions,
    secretBox: opts.secretBox,
    socketPath: opts.config.BIRD_CONTROL_SOCKET,
    configPath: opts.config.BIRD_CONFIG_PATH,
  });
  return { ...services, maintenance, localBird, secretBox: opts.secretBox };
}

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
  app.addHook("onSend", async (req, reply) => {
    reply.header("x-request-id", req.id);
  });

  await app.register(errorsPlugin);
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
  // The document's plugin first: it sees only routes added after it (/metrics is one).
  await app.register(openapiPlugin, { version: deps.buildInfo.version });
  await app.register(metricsPlugin);
  await app.register(authPlugin, { sql: deps.sql, clock: deps.clock, authenticator: deps.services.authenticator });
  await app.register(idempotencyPlugin, { sql: deps.sql, clock: deps.clock, secretBox: deps.services.secretBox });
  await app.register(lookupInvalidationPlugin, { bus: deps.bus, invalidate: deps.services.lookup.invalidate });

  await app.register(publicRoutes, { deps });
  await app.register(apiKeyRoutes, { deps });
  await app.register(tenantRoutes, { deps });
  await app.register(settingsRoutes, { deps });
  await app.register(auditRoutes, { deps });
  await app.register(jobRoutes, { deps });
  await app.register(runtimeLogRoutes, { deps });
  await app.register(moduleRoutes, { deps });
  await app.register(entryRoutes, { deps });
  await app.register(csvRoutes, { deps });
  await app.register(cdnSourceRoutes, { deps });
  await app.register(communityRoutes, { deps });
  await app.register(dohProfileRoutes, { deps });
  await app.register(catalogRoutes, { deps });
  await app.register(revisionRoutes, { deps });
  await app.register(refreshRoutes, { deps });
  await app.register(lookupRoutes, { deps });
  await app.register(speakerRoutes, { deps });
  await app.register(natsRoutes, { deps });
  await app.register(peerRoutes, { deps });
  await app.register(nodeRoutes, { deps });
  await app.register(maintenanceRoutes, { deps });
  await app.register(birdRoutes, { deps });
  return app;
}
