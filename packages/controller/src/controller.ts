import { type Clock, createSystemClock } from "@rlc/shared/time";
import type { FastifyBaseLogger, FastifyInstance, FastifyServerOptions } from "fastify";
import { buildApp } from "./app.js";
import type { AppDeps } from "./app-deps.js";
import { type Bus, createBus } from "./bus/index.js";
import { restoreOnReconnect } from "./bus/nats-reconnect.js";
import { loadNatsTenantAuthority, type NatsTenantAuthority } from "./bus/nats-tenants.js";
import type { Config } from "./config.js";
import { type Database, openDatabase } from "./db/connect.js";
import { migrate } from "./db/migrate.js";
import { listTenantIds } from "./db/tenants.js";
import { withEventHistory } from "./events/history.js";
import { createAgentService } from "./grpc/agent-service.js";
import { type GrpcListener, grpcTlsOf, listenGrpc } from "./grpc/server.js";
import { loadGrpcTls } from "./grpc/tls.js";
import { startAwaitingEvaluator } from "./jobs/awaiting-evaluator.js";
import type { JobHandler } from "./jobs/handler.js";
import { createJobHandlers } from "./jobs/handlers.js";
import { startWorker } from "./jobs/worker.js";
import { type BuildInfo, loadBuildInfo } from "./lib/build-info.js";
import { createDatabaseHealth } from "./lib/database-health.js";
import { createSecretBox } from "./lib/secret-box.js";
import { createControllerMetrics } from "./metrics/controller-metrics.js";
import { registerRpkiMetrics } from "./metrics/rpki-metrics.js";
import { listenMetrics, type MetricsListener } from "./metrics-listener.js";
import { listenNodeHttps, type NodeHttpsListener } from "./node-https.js";
import { bundleReissueTask } from "./scheduler/bundle-reissue.js";
import { type PeriodicTask, type Scheduler, startScheduler } from "./scheduler/scheduler.js";
import {
  awaitingSweepTask,
  idempotencyExpiryTask,
  maintenancePolicyTask,
  moduleRefreshTask,
  revisionRetentionTask,
  runtimeLogsAutoTask,
} from "./scheduler/tasks.js";
import { type AuditPusher, startAuditPusher } from "./services/access/audit-push.js";
import { openDataKey } from "./services/access/data-key.js";
import { sealSecretsAtRest } from "./services/access/secrets-at-rest.js";
import { type BootstrapResult, bootstrapDefaultTenant } from "./services/access/tenants.js";
import { createServices } from "./services/create-services.js";
import { createSchedulerLock } from "./services/operations/scheduler-lock.js";
import { createRevisionStore } from "./services/revisions/revision-store.js";
import { type AsnSource, createAsnSource } from "./sources/asn-source.js";
import { createOutboundClient } from "./sources/outbound.js";

export interface Controller {
  app: FastifyInstance;
  scheduler: Scheduler | null;
  deps: AppDeps;
  db: Database;
  bootstrap: BootstrapResult;
  /** The agents' gRPC listener (roles app-all and api); with GRPC_PORT=0 its `port` is the one picked. */
  grpc: GrpcListener | null;
  /** The agents' HTTPS listener (node routes; roles app-all and api); with NODE_HTTPS_PORT=0 its `port` is the one picked. */
  nodeHttps: NodeHttpsListener | null;
  /** `/metrics`' own listener when METRICS_PORT is set (with METRICS_PORT=0 its `port` is the one picked). */
  metricsListener: MetricsListener | null;
  close(): Promise<void>;
}

export interface StartOptions {
  clock?: Clock;
  buildInfo?: BuildInfo;
  logger?: FastifyServerOptions["logger"];
  /** An already open database (tests); closed by the caller. */
  database?: Database;
  bus?: Bus;
  /** Told, once tenant `default` exists, whether this start made it and with which key (server.ts shows it). */
  onBootstrap?: (bootstrap: BootstrapResult) => Promise<unknown>;
  /** Replaces the job handlers (tests of the queue itself). */
  jobHandlers?: JobHandler[];
  /** Scheduler election interval (tests of the hand-over). */
  electionMs?: number;
  /**
   * Listen for agents on GRPC_HOST:GRPC_PORT (roles app-all and api). server.ts does; in-process
   * controllers (tests, benchmarks) opt in, so that they never contend for the default port.
   */
  grpc?: boolean;
  /**
   * Serve the node routes over HTTPS on NODE_HTTPS_HOST:NODE_HTTPS_PORT (roles app-all and api),
   * with the gRPC certificate. server.ts does; in-process controllers opt in, as for `grpc`.
   */
  nodeHttps?: boolean;
}

export function splitCidrs(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The controller process minus HTTP listening: database (migrated, bootstrapped), bus, background
 * workers, the HTTP app and, with `grpc: true`, the agents' gRPC listener. `server.ts` listens;
 * the tests inject into `app`.
 */
export async function startController(config: Config, opts: StartOptions = {}): Promise<Controller> {
  const clock = opts.clock ?? createSystemClock();
  const db = opts.database ?? (await openDatabase({ url: config.DATABASE_URL, dataDir: config.APP_DATA_DIR }));
  const closers: (() => Promise<unknown>)[] = [];
  try {
    await migrate(db.sql);
    const bootstrap = await bootstrapDefaultTenant(db.sql, { bootstrapKey: config.BOOTSTRAP_API_KEY, now: new Date(clock.now()) });
    // Right after the commit that made it: a later step that fails (NATS, the listener) must not
    // take the only copy of a generated key with it.
    await opts.onBootstrap?.(bootstrap);
    const plainBus = opts.bus ?? (await createBus(config));
    if (!opts.bus) closers.push(() => plainBus.close());
    let eventLog: FastifyBaseLogger | null = null;
    const natsAuthority: NatsTenantAuthority | null =
      config.NATS_URL && config.NATS_OPERATOR_SEED_FILE && config.NATS_SYSTEM_CREDS_FILE && config.NATS_CREDS_FILE
        ? await loadNatsTenantAuthority({
            url: config.NATS_URL,
            operatorSeedFile: config.NATS_OPERATOR_SEED_FILE,
            controllerCredsFile: config.NATS_CREDS_FILE,
            systemCredsFile: config.NATS_SYSTEM_CREDS_FILE,
            limits: { maxConnections: config.NATS_TENANT_MAX_CONNECTIONS, storageBytes: config.NATS_TENANT_STORAGE_BYTES },
          })
        : null;
    if (natsAuthority) closers.push(() => natsAuthority.close());
    const bus = withEventHistory(plainBus, {
      maxAgeSeconds: config.NATS_EVENTS_MAX_AGE_SECONDS,
      maxBytes: config.NATS_EVENTS_MAX_BYTES,
      replicas: config.NATS_EVENTS_REPLICAS,
      // With tenant accounts each stream lives in its tenant's account; without, in the one NATS
      // the controller connects to (development, or a NATS without accounts).
      ensureStream: natsAuthority ? (tenantId, spec) => natsAuthority.ensureStream(tenantId, spec) : null,
      onError: (tenantId, err) => eventLog?.warn({ err, tenant_id: tenantId }, "event stream not created or updated; events are published without history"),
    });
    const outbound = createOutboundClient({ allowCidrs: splitCidrs(config.APP_OUTBOUND_ALLOW_CIDRS) });
    closers.push(() => outbound.close());

    const asnSource: AsnSource | null = config.ASN_SOURCE
      ? createAsnSource(config.ASN_SOURCE, { client: outbound, ...(config.ASN_SOURCE_URL ? { baseUrl: config.ASN_SOURCE_URL } : {}) })
      : null;
    if (asnSource) closers.push(() => asnSource.close());
    let log: FastifyInstance["log"] | null = null;
    const revisions = createRevisionStore({
      ...(config.REVISION_STORAGE === "whole" ? { chain: { maxDepth: 0 } } : {}),
      onRewriteError: (err, { tenantId, revisionId }) =>
        log?.warn(
          { err, tenant_id: tenantId, revision_id: revisionId },
          "revision not rewritten whole after its commit: it stays stored as a change against its parent (it reads the same; a later revision starts its chain again)",
        ),
    });
    const pushEnabled = Boolean(config.AUTH_PORTAL_URL && config.AUTH_AUDIT_INGEST_SECRET);
    let pusher: AuditPusher | null = null;
    // Bound before the services exist, so enrollment names the port really bound (GRPC_PORT=0).
    const servesApi = config.APP_SERVICE === "app-all" || config.APP_SERVICE === "api";
    const servesAgents = opts.grpc === true && servesApi;
    const dataKey = await openDataKey(db.sql, { file: config.APP_SECRET_KEY_FILE, dataDir: config.APP_DATA_DIR });
    const secretBox = createSecretBox(dataKey.key);
    // TLS unless told otherwise; the API roles need the CA hash for the tokens they issue even
    // when this process does not listen for agents itself.
    const grpcFiles = grpcTlsOf(config);
    const specificHost = config.GRPC_HOST !== "0.0.0.0" && config.GRPC_HOST !== "::" ? [config.GRPC_HOST] : [];
    const grpcTls =
      servesApi && !config.GRPC_INSECURE
        ? await loadGrpcTls({ sql: db.sql, secretBox, files: grpcFiles, names: specificHost, now: new Date(clock.now()), pin: config.GRPC_TLS_PIN })
        : null;
    const grpc = servesAgents
      ? await listenGrpc({
          host: config.GRPC_HOST,
          port: config.GRPC_PORT,
          tls: grpcTls && { cert: grpcTls.cert, key: grpcTls.key },
          connection: { perAddress: config.GRPC_MAX_CONNECTIONS_PER_ADDRESS },
        })
      : null;
    if (grpc) closers.unshift(() => grpc.close());
    const serviceConfig = grpc ? { ...config, GRPC_PORT: grpc.port } : config;
    const metrics = createControllerMetrics({ sql: db.sql, clock, bus, onQueryError: (query, err) => log?.warn({ err, query }, "metrics query failed") });
    const services = createServices({
      metrics: metrics.jobs,
      config: serviceConfig,
      sql: db.sql,
      bus,
      revisions,
      pushEnabled,
      secretBox,
      outbound,
      asnSource,
      natsAuthority,
      caHash: grpcTls?.caHash ?? null,
      onAuditRecorded: () => pusher?.wake(),
    });
    registerRpkiMetrics(metrics.registry, services.rpki);
    const carried = await sealSecretsAtRest(db.sql, { secretBox, signing: services.signing, now: new Date(clock.now()) });
    const databaseHealth = createDatabaseHealth({
      probe: () => db.probe(),
      monitor: db.kind === "postgres",
      onChange: (down, err) =>
        down
          ? log?.error({ err }, "the database cannot be reached: requests answer 503 database_unavailable until it answers again")
          : log?.info("the database answers again"),
    });
    closers.push(async () => databaseHealth.close());
    const deps: AppDeps = { config, sql: db.sql, clock, bus, buildInfo: opts.buildInfo ?? loadBuildInfo(), outbound, services, metrics, databaseHealth };
    const app = await buildApp(deps, opts.logger === undefined ? {} : { logger: opts.logger });
    log = app.log;
    eventLog = app.log;
    // Every tenant's event stream, created or brought to NATS_EVENTS_MAX_AGE_SECONDS (a tenant
    // made later gets its stream with its first event); a failure is logged, not fatal.
    await bus.ensureTenants(await listTenantIds(db.sql));
    restoreOnReconnect({
      bus,
      authority: natsAuthority,
      history: bus,
      tenantIds: () => listTenantIds(db.sql),
      onError: (err) => app.log.warn({ err }, "a tenant's NATS account or event stream was not restored after NATS came back; retried with its next event"),
    });
    closers.push(() => app.close());
    const metricsListener = config.METRICS_PORT === undefined ? null : await listenMetrics(config, metrics.registry);
    if (metricsListener) {
      closers.unshift(() => metricsListener.close());
      app.log.info({ address: metricsListener.address }, "/metrics listening on its own listener");
    }
    if (config.NATS_ACCOUNT_SEED_FILE && !natsAuthority)
      app.log.warn(
        "NATS_ACCOUNT_SEED_FILE is the shared-account layout, in which one tenant's NATS users can publish into another's subjects: no NATS users are minted (agents use gRPC and HTTP). Run `controller nats init` for one account per tenant and set NATS_OPERATOR_SEED_FILE and NATS_SYSTEM_CREDS_FILE",
      );
    if (dataKey.created)
      app.log.warn(
        { path: dataKey.path, key_id: dataKey.keyId },
        "data key for secrets at rest created and recorded in the database; keep it (and back it up): without it sealed secrets cannot be opened, and every other controller on this database needs the same key (APP_SECRET_KEY_FILE)",
      );
    if (Object.values(carried).some((n) => n > 0))
      app.log.info(carried, "secrets stored in plain text by an earlier version sealed; tenants given their own signing keys");
    if (grpc) {
      const agentService = createAgentService({
        sql: db.sql,
        bus,
        clock,
        node: services.node,
        authenticator: services.authenticator,
        logger: app.log,
        // The HTTP bundle route's places: one count per key and in all, whichever transport.
        bundles: services.bundleDownloads.limiter,
      });
      grpc.serve(agentService);
      metrics.watchAgentStreams(agentService);
      app.log.info({ address: grpc.address, tls: grpc.tls, ca_hash: grpcTls?.caHash ?? null }, "gRPC AgentService listening");
      if (!grpc.tls) app.log.warn("gRPC is plaintext (GRPC_INSECURE=true): agents must run with RL_INSECURE=true or reach it through a TLS proxy");
    }
    if (grpcTls?.pinned === "leaf") {
      app.log.warn(
        { ca_hash: grpcTls.caHash },
        "GRPC_TLS_PIN=leaf: agents pin the server certificate itself. Renew it with the same key (the hash is its public key's) and restart the agents to take it; a new key needs new enrollment tokens",
      );
    }
    const nodePort = config.NODE_HTTPS_PORT;
    const nodeHttps =
      opts.nodeHttps === true && servesApi && grpcTls && nodePort !== "off"
        ? await listenNodeHttps({ app, host: config.NODE_HTTPS_HOST, port: nodePort, tls: grpcTls, config })
        : null;
    if (nodeHttps) {
      closers.unshift(() => nodeHttps.close());
      app.log.info(
        { address: nodeHttps.address, ca_hash: grpcTls?.caHash ?? null },
        "agents' HTTPS listening (node routes; RL_CONTROLLER_URL=https://<host>:<port>)",
      );
    } else if (opts.nodeHttps === true && servesApi && !grpcTls) {
      app.log.info("agents' HTTPS not served: GRPC_INSECURE=true (a TLS proxy in front serves the agents)");
    }

    const runsWorkers = config.APP_SERVICE === "app-all" || config.APP_SERVICE === "worker";
    const runsScheduler = config.APP_SERVICE === "app-all" || config.APP_SERVICE === "scheduler";
    let scheduler: Scheduler | null = null;
    if (pushEnabled && runsScheduler) {
      // Periodic work of the scheduler leader only (issue 6); its leased rows would also be safe
      // with several pushers, but one sender keeps the portal's order and load predictable.
      pusher = startAuditPusher({
        sql: db.sql,
        http: outbound,
        portalUrl: config.AUTH_PORTAL_URL!,
        secret: config.AUTH_AUDIT_INGEST_SECRET!,
        clock,
        logger: app.log,
        shouldRun: () => scheduler?.isLeader() ?? false,
      });
      const p = pusher;
      closers.unshift(() => p.stop());
    }
    const handlers = opts.jobHandlers ?? createJobHandlers({ services });
    if (runsWorkers && handlers.length) {
      const worker = startWorker({ queue: services.jobs, clock, logger: app.log, handlers, metrics: metrics.jobs });
      closers.unshift(() => worker.stop());
      // Agents' reports end awaiting applies here, as they arrive (the sweep is the safety net).
      const evaluator = startAwaitingEvaluator({ bus, clock, logger: app.log, deploy: services.deploy });
      closers.unshift(() => evaluator.stop());
    }
    if (runsScheduler) {
      const tasks: PeriodicTask[] = [
        idempotencyExpiryTask(services.periodic),
        runtimeLogsAutoTask(services.periodic),
        moduleRefreshTask(services.periodic),
        maintenancePolicyTask(services.maintenance, bus),
        revisionRetentionTask(services.maintenance, bus),
        bundleReissueTask(services.deploy),
        awaitingSweepTask(services.deploy, clock),
      ];
      const s = startScheduler({ lock: createSchedulerLock(db), clock, logger: app.log, tasks, ...(opts.electionMs ? { electionMs: opts.electionMs } : {}) });
      scheduler = s;
      metrics.watchScheduler(s);
      closers.unshift(() => s.stop());
    }
    return {
      app,
      scheduler,
      deps,
      db,
      bootstrap,
      grpc,
      nodeHttps,
      metricsListener,
      async close() {
        for (const close of closers) await close().catch(() => {});
        if (!opts.database) await db.close();
      },
    };
  } catch (err) {
    for (const close of closers) await close().catch(() => {});
    if (!opts.database) await db.close().catch(() => {});
    throw err;
  }
}
