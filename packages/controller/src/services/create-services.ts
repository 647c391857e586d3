import type { Bus } from "../bus/index.js";
import type { NatsTenantAuthority } from "../bus/nats-tenants.js";
import type { Config } from "../config.js";
import type { Sql } from "../db/connect.js";
import { DEFAULT_GRPC_LIMITS } from "../grpc/limits.js";
import type { SecretBox } from "../lib/secret-box.js";
import type { JobMetrics } from "../metrics/controller-metrics.js";
import type { AsnSource } from "../sources/asn-source.js";
import { countrySourceOf } from "../sources/country-source.js";
import { createIrrSource } from "../sources/irr-source.js";
import type { OutboundClient } from "../sources/outbound.js";
import { createRpkiValidator, type RpkiValidator } from "../sources/rpki-source.js";
import { createApiKeyService } from "./access/api-keys.js";
import { type AuditLog, type AuditWriter, createAuditLog, createAuditWriter } from "./access/audit.js";
import { type Authenticator, createAuthenticator } from "./access/authenticator.js";
import { createNatsCredentialService, type NatsCredentialService } from "./access/nats-credentials.js";
import { createTenantService } from "./access/tenants.js";
import { type AgentNotifier, createAgentNotifier } from "./deploy/agent-notifier.js";
import { type BundleDownloads, createBundleDownloads } from "./deploy/bundle-downloads.js";
import { createBundleLimiter } from "./deploy/bundle-limiter.js";
import type { SectionDeps } from "./deploy/bundle-sections.js";
import { previewPeersOf } from "./deploy/bundles.js";
import { createDeployService, type DeployService } from "./deploy/deploy.js";
import type { DeflatedPart } from "./deploy/gzip-parts.js";
import { createLivePolls, type LivePolls } from "./deploy/live-status.js";
import { createLocalBirdService } from "./deploy/local-bird.js";
import { createNodeService } from "./deploy/node.js";
import { createPeerService } from "./deploy/peers.js";
import { createKeptBySize, createSectionCache, SECTION_CACHE_BYTES } from "./deploy/section-cache.js";
import { createSectionColumnsCache } from "./deploy/section-columns.js";
import { createSessionHistory, type SessionHistory } from "./deploy/session-history.js";
import { createSigningService } from "./deploy/signing.js";
import { createSpeakerService } from "./deploy/speakers.js";
import { createCdnSourceService } from "./ingest/cdn-sources.js";
import { createDohProfileService } from "./ingest/doh-profiles.js";
import { createIngestService, type IngestService } from "./ingest/ingest.js";
import { createOutboundRules } from "./ingest/outbound-rules.js";
import { createRpkiDryRunService, type RpkiDryRunService } from "./ingest/rpki-dry-run.js";
import { createJobService, type JobQueue } from "./operations/jobs.js";
import { createMaintenanceService } from "./operations/maintenance.js";
import { createPeriodicService, type PeriodicService } from "./operations/periodic.js";
import { createRuntimeLogService } from "./operations/runtime-logs.js";
import { createSettingsService } from "./operations/settings.js";
import { createRevisionBuilder } from "./revisions/revision-builder.js";
import { createRevisionCommitter } from "./revisions/revision-commit.js";
import type { RevisionStore } from "./revisions/revision-store.js";
import { createRevisionService } from "./revisions/revisions.js";
import { createCatalogService } from "./route-lists/catalog.js";
import { createCommunityService } from "./route-lists/communities.js";
import { createCsvService } from "./route-lists/csv.js";
import { createEntryService } from "./route-lists/entries.js";
import { createLookupService } from "./route-lists/lookup.js";
import { createModuleService } from "./route-lists/modules.js";

/**
 * Builds every service the controller's transports share: the HTTP routes, the job handlers, the
 * scheduler and the gRPC service receive this one object.
 */
export interface AppServices {
  audit: AuditWriter;
  /** `GET /v1/audit`: the journal the writer above keeps. */
  auditLog: AuditLog;
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
  rpkiDryRun: RpkiDryRunService;
  /** The VRP document (`RPKI_VRP_SOURCE`), for the metrics; null = none configured. */
  rpki: RpkiValidator | null;
  signing: ReturnType<typeof createSigningService>;
  speakers: ReturnType<typeof createSpeakerService>;
  peers: ReturnType<typeof createPeerService>;
  node: ReturnType<typeof createNodeService>;
  /** `GET /v1/speakers/{speaker_id}/sessions/history`: the session changes the status reports showed. */
  sessionHistory: SessionHistory;
  /** What the bundle sections are built, kept and opened with in this process (shared by node and deploy): the opened sections GetBundle serves, the full ones kept in columns. */
  sections: SectionDeps;
  maintenance: ReturnType<typeof createMaintenanceService>;
  /** The scheduler's housekeeping: idempotency expiry, the runtime-log auto cleanup, due refreshes. */
  periodic: PeriodicService;
  localBird: ReturnType<typeof createLocalBirdService>;
  /** Refreshing modules: the module_ingest job's work. */
  ingest: IngestService;
  /** Applying revisions to speakers, issuing and re-issuing their bundles. */
  deploy: DeployService;
  /** The HTTP bundle route's streams, and the places for bundle transfers that gRPC GetBundle shares. */
  bundleDownloads: BundleDownloads;
  /** NATS users for agents and dashboards, in their tenant's account (none without NATS_OPERATOR_SEED_FILE). */
  natsCredentials: NatsCredentialService;
  /** Signed wake-ups of the agents (new revision, live poll). */
  notifier: AgentNotifier;
  /** `GET /v1/speakers?live=true`: the agents polled, coalesced per speaker. */
  livePolls: LivePolls;
  /** Seals and opens the secrets kept at rest (data key from APP_SECRET_KEY_FILE or APP_DATA_DIR). */
  secretBox: SecretBox;
}

/** Speakers, peers, signing and the node side (enrollment, bundles, status reports). */
function deployServices(
  opts: {
    config: Config;
    sql: Sql;
    bus: Bus;
    secretBox: SecretBox;
    revisions: RevisionStore;
    natsAuthority?: NatsTenantAuthority | null;
    caHash?: string | null | undefined;
    metrics?: JobMetrics | undefined;
  },
  audit: AuditWriter,
  authenticator: Authenticator,
  queue: JobQueue,
) {
  const natsCredentials = createNatsCredentialService({ authority: opts.natsAuthority ?? null, audit });
  const signing = createSigningService({ sql: opts.sql, audit, secrets: opts.secretBox, keyFile: opts.config.BUNDLE_SIGNING_KEY_FILE });
  const notifier = createAgentNotifier({ bus: opts.bus, sql: opts.sql, signing, now: () => new Date() });
  // Opened bundle sections, shared by the apply that builds them and the streams that serve them.
  const sections: SectionDeps = {
    revisions: opts.revisions,
    secretBox: opts.secretBox,
    sql: opts.sql,
    sections: createSectionCache(SECTION_CACHE_BYTES),
    columns: createSectionColumnsCache(),
  };
  const grpcHost = opts.config.GRPC_HOST === "0.0.0.0" || opts.config.GRPC_HOST === "::" ? null : opts.config.GRPC_HOST;
  const speakers = createSpeakerService({ sql: opts.sql, audit, bus: opts.bus, onKeysChanged: authenticator.invalidate, caHash: opts.caHash ?? null });
  const sessionHistory = createSessionHistory({ sql: opts.sql });
  return {
    sessionHistory,
    signing,
    sections,
    natsCredentials,
    notifier,
    livePolls: createLivePolls({ bus: opts.bus, notifier, sql: opts.sql, speakers }),
    speakers,
    peers: createPeerService({ sql: opts.sql, audit, secrets: opts.secretBox, queue }),
    node: createNodeService({
      sections,
      sql: opts.sql,
      bus: opts.bus,
      audit,
      signing,
      secretBox: opts.secretBox,
      // Agents are told an endpoint only when the listener names a host they can reach.
      grpcEndpoint: grpcHost ? `${grpcHost}:${opts.config.GRPC_PORT}` : null,
      natsUrl: opts.config.NATS_URL ?? null,
      natsCredentials,
      sessionHistory,
      onKeysChanged: authenticator.invalidate,
      served: { formats: opts.config.BUNDLE_FORMATS, ...(opts.metrics?.bundleServed ? { onServed: opts.metrics.bundleServed } : {}) },
    }),
  };
}

export function createServices(opts: {
  /** Counts what the ingest service sees (failed sources). */
  metrics?: JobMetrics;
  config: Config;
  sql: Sql;
  bus: Bus;
  revisions: RevisionStore;
  pushEnabled: boolean;
  secretBox: SecretBox;
  /** The client every fetch of a source goes through, and the ASN prefix source (null = none configured). */
  outbound: OutboundClient;
  asnSource: AsnSource | null;
  /** Keeps the tenants' NATS accounts and signs their users (NATS_OPERATOR_SEED_FILE); null = none minted. */
  natsAuthority?: NatsTenantAuthority | null;
  /** `sha256:<hex>` of the gRPC CA, carried by every enrollment token; null = plaintext gRPC. */
  caHash?: string | null;
  onAuditRecorded?: () => void;
}): AppServices {
  const audit = createAuditWriter({ pushEnabled: opts.pushEnabled, ...(opts.onAuditRecorded ? { onRecorded: opts.onAuditRecorded } : {}) });
  const authenticator = createAuthenticator({ sql: opts.sql });
  // The outbound policy a saved URL is checked against (a CDN source's, a DoH profile's), built once.
  const rules = createOutboundRules(opts.outbound, opts.config.APP_OUTBOUND_ALLOW_CIDRS);
  // Read on first use and again every RPKI_REFRESH_MINUTES (sources/rpki-source.ts).
  const rpki = opts.config.RPKI_VRP_SOURCE
    ? createRpkiValidator({
        spec: opts.config.RPKI_VRP_SOURCE,
        outbound: opts.outbound,
        refreshMinutes: opts.config.RPKI_REFRESH_MINUTES,
        maxAgeHours: opts.config.RPKI_MAX_AGE_HOURS,
      })
    : null;
  // The one job queue, with the per-tenant caps (queued API work, running jobs): every service that starts a job enqueues on it, every worker claims from it.
  const jobs = createJobService({
    audit,
    bus: opts.bus,
    sql: opts.sql,
    tenantMaxQueued: opts.config.JOBS_TENANT_MAX_QUEUED,
    tenantMaxRunning: opts.config.JOBS_TENANT_MAX_RUNNING,
  });
  const services: Omit<AppServices, "revisions" | "maintenance" | "periodic" | "localBird" | "secretBox" | "ingest" | "deploy" | "bundleDownloads"> = {
    audit,
    auditLog: createAuditLog({ sql: opts.sql }),
    authenticator,
    apiKeys: createApiKeyService({ sql: opts.sql, audit, onKeysChanged: authenticator.invalidate }),
    tenants: createTenantService({ sql: opts.sql, audit }),
    settings: createSettingsService({ audit, sql: opts.sql }),
    jobs,
    runtimeLogs: createRuntimeLogService({ config: opts.config, sql: opts.sql }),
    modules: createModuleService({ sql: opts.sql, audit }),
    entries: createEntryService({ sql: opts.sql, audit }),
    communities: createCommunityService({ sql: opts.sql, audit }),
    dohProfiles: createDohProfileService({ sql: opts.sql, audit, secrets: opts.secretBox, rules }),
    cdnSources: createCdnSourceService({ audit, sql: opts.sql, outbound: opts.outbound, rules }),
    csv: createCsvService({ audit, sql: opts.sql }),
    catalog: createCatalogService({ sql: opts.sql }),
    lookup: createLookupService({ sql: opts.sql, revisions: opts.revisions, budgetBytes: opts.config.LOOKUP_CACHE_MAX_MB * 1024 * 1024, rpki }),
    rpkiDryRun: createRpkiDryRunService({ sql: opts.sql, rpki }),
    rpki,
    ...deployServices(opts, audit, authenticator, jobs),
  };
  const deploy = createDeployService({
    sql: opts.sql,
    bus: opts.bus,
    queue: jobs,
    metrics: opts.metrics,
    audit,
    signing: services.signing,
    notifier: services.notifier,
    ...services.sections,
  });
  // A revision is committed in one place (ingest and rollback), with the sections deploy builds for it.
  const committer = createRevisionCommitter({
    revisions: opts.revisions,
    bus: opts.bus,
    sections: deploy,
    // An apply's agents fetch in the seconds after the commit: the rewrite comes after them.
    rewrite: { sql: opts.sql, delayMs: opts.config.REVISION_WHOLE_DELAY_MS },
  });
  const revisions = createRevisionService({ sql: opts.sql, audit, revisions: opts.revisions, committer, previewPeers: previewPeersOf });
  const maintenance = createMaintenanceService({ sql: opts.sql, queue: jobs, audit, revisions, runtimeLogs: services.runtimeLogs });
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
  const ingest = createIngestService({
    queue: jobs,
    rpki,
    audit,
    metrics: opts.metrics,
    sql: opts.sql,
    bus: opts.bus,
    committer,
    builder: createRevisionBuilder({ full: opts.config.REFRESH_MODE === "full" }),
    outbound: opts.outbound,
    asnSource: opts.asnSource,
    irrSource: opts.config.IRR_SOURCE
      ? createIrrSource(opts.config.IRR_SOURCE, {
          ...(opts.config.IRR_SOURCES ? { sources: opts.config.IRR_SOURCES } : {}),
          maxMembers: opts.config.IRR_MAX_MEMBERS,
          timeLimitMs: opts.config.IRR_TIME_LIMIT_SECONDS * 1000,
        })
      : null,
    countrySource: countrySourceOf(opts.config, opts.outbound),
    secretBox: opts.secretBox,
  });
  // Made once: the one count of bundle transfers for HTTP and gRPC (controller.ts hands the
  // limiter to the gRPC service).
  const bundleDownloads = createBundleDownloads({
    sql: opts.sql,
    node: services.node,
    limiter: createBundleLimiter(DEFAULT_GRPC_LIMITS),
    compressed: createKeptBySize<DeflatedPart>(SECTION_CACHE_BYTES),
    chunkBytes: DEFAULT_GRPC_LIMITS.chunkBytes,
  });
  const periodic = createPeriodicService({ sql: opts.sql, queue: jobs, runtimeLogs: services.runtimeLogs });
  return { ...services, revisions, maintenance, periodic, localBird, ingest, deploy, bundleDownloads, secretBox: opts.secretBox };
}
