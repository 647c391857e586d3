import { readFile } from "node:fs/promises";
import { hostname as osHostname } from "node:os";
import { join } from "node:path";
import { type AgentNotification, grpc as grpcNs, loadAgentService, notificationFromJson } from "@rlc/proto";
import { BirdClient, BirdVersionWatch, createProcessRunner, type ProcessRunner } from "@rlc/shared/bird";
import { verifyNotification } from "@rlc/shared/bundle";
import { type Clock, createSystemClock } from "@rlc/shared/time";
import { type ControllerClient, createControllerClient } from "./bundle/controller-client.js";
import { AgentGrpcClient } from "./bundle/grpc-client.js";
import { ControllerHttpClient } from "./bundle/http-client.js";
import { startNatsWakeups } from "./bundle/nats-wakeups.js";
import { pinnedFetch, pinnedGrpcCredentials } from "./bundle/pinning.js";
import { type AgentConfig, requireControllerUrls, splitHostPort } from "./config.js";
import { enrollmentSettings, ensureEnrolled } from "./enroll.js";
import { AgentMetrics } from "./http/metrics.js";
import { type MetricsServer, startMetricsServer } from "./http/metrics-server.js";
import { createLogger, errorFields, type Logger } from "./log.js";
import { readNatsCredentials } from "./nats-credentials.js";
import { type NodeIdentity, StateStore } from "./state.js";
import { LivePollAnswerer } from "./status/live-polls.js";
import { StatusReporter } from "./status/reporter.js";
import { SyncLoop } from "./sync-loop.js";
import { startPeriodic } from "./timing.js";

export interface AgentDeps {
  version: string;
  clock?: Clock;
  log?: Logger;
  runner?: ProcessRunner;
  hostname?: string;
  /** Knobs the environment does not set; tests shorten them. */
  tuning?: {
    sessionCheckMs?: number;
    watchIdleMs?: number;
    maxBundleBytes?: number;
    retry?: { baseMs: number; maxMs: number };
  };
}

export interface RunningAgent {
  identity: NodeIdentity;
  loop: SyncLoop;
  reporter: StatusReporter;
  metrics: AgentMetrics;
  client: ControllerClient;
  metricsServer: MetricsServer | null;
  /** Stops every timer and stream, lets an apply in flight finish, closes the sockets. */
  stop(): Promise<void>;
}

/**
 * Builds the agent from its configuration and starts it: enrollment when needed, the sync loop,
 * and the three ways it is woken (gRPC Watch, NATS, the periodic HTTP poll), the status reporter
 * and the local metrics listener. main.ts runs this and handles signals; tests run it in-process.
 */
/**
 * The pinned CA when there is one; else RL_GRPC_TLS_CA; else plaintext under RL_INSECURE, or the
 * system's roots. Null while a pin is known but its CA is not (gRPC waits for it).
 */
type GrpcCredentials = ReturnType<typeof grpcNs.credentials.createInsecure>;

export async function grpcCredentialsFor(config: AgentConfig, identity: NodeIdentity): Promise<GrpcCredentials | null> {
  if (identity.controller_ca_pem) return pinnedGrpcCredentials(identity.controller_ca_pem);
  if (config.grpcTlsCa) return grpcNs.credentials.createSsl(await readFile(config.grpcTlsCa));
  if (identity.ca_hash) return null;
  return config.insecure ? grpcNs.credentials.createInsecure() : grpcNs.credentials.createSsl();
}

export async function startAgent(config: AgentConfig, deps: AgentDeps): Promise<RunningAgent> {
  const clock = deps.clock ?? createSystemClock();
  const log = deps.log ?? createLogger(config.logLevel);
  const tuning = deps.tuning ?? {};
  const state = new StateStore(config.stateDir);
  await state.init();
  const baseUrls = requireControllerUrls(config);
  if (config.insecure) {
    log.warn(
      "RL_INSECURE=true: the controller is not authenticated (http:// and plaintext gRPC allowed, enrollment without a CA hash); anyone on the path can read the node key and forge answers",
    );
  }
  const identity = await ensureEnrolled({
    ...enrollmentSettings(config),
    log,
    state,
    hostname: deps.hostname ?? osHostname(),
    agentVersion: deps.version,
    now: () => clock.now(),
  });
  const { speaker_id: speakerId, tenant_id: tenantId } = identity;
  log.info("agent starting", { speaker_id: speakerId, version: deps.version, mode: config.birdMode, config: config.birdConfigPath });

  const metrics = new AgentMetrics({ version: deps.version, speakerId });
  metrics.restoreApplied(await state.readApplied());
  // First of the things that hold resources: a port already taken fails the start before any other is open.
  const metricsServer = config.metricsListen ? await startMetricsServer(metrics, splitHostPort(config.metricsListen)) : null;
  // Every `show status` through it tells the version, which the render follows (shared/bird/version.ts).
  const bird = new BirdVersionWatch(new BirdClient({ socketPath: config.birdSocket }));
  const caPem = identity.controller_ca_pem ?? null;
  const http = new ControllerHttpClient({
    baseUrl: baseUrls,
    nodeKey: identity.api_key,
    announcement: config.announcement,
    ...(caPem && baseUrls.some((u) => u.startsWith("https://")) ? { fetch: pinnedFetch(caPem) } : {}),
    onMove: (from, to) => {
      log.warn("controller URL unreachable; moving to the next", { from, to });
      metrics.setEndpoint("http", to);
    },
  });
  metrics.setEndpoint("http", http.endpoint);
  // RL_GRPC_URL lists the replicas; enrollment names only the one that enrolled the agent.
  const grpcUrls = config.grpcUrls.length > 0 ? config.grpcUrls : identity.grpc_endpoint ? [identity.grpc_endpoint] : [];
  const credentials = await grpcCredentialsFor(config, identity);
  if (grpcUrls.length > 0 && !credentials)
    log.warn("gRPC not used: the controller's CA named by the pin is not known yet (HTTP only until a start fetches it)", { address: grpcUrls.join(",") });
  const grpc =
    grpcUrls.length > 0 && credentials
      ? new AgentGrpcClient({
          address: grpcUrls,
          onEndpoint: (address) => metrics.setEndpoint("grpc", address),
          credentials,
          nodeKey: identity.api_key,
          speakerId,
          service: loadAgentService(),
          clock,
          log,
          watchIdleMs: tuning.watchIdleMs,
          announcement: config.announcement,
        })
      : null;
  if (grpc) metrics.setEndpoint("grpc", grpc.endpoint);
  log.info("controller endpoints", { http: baseUrls, grpc: grpcUrls, using_http: http.endpoint, using_grpc: grpc?.endpoint ?? null });
  const client = createControllerClient({
    http,
    grpc,
    speakerId,
    maxBundleBytes: tuning.maxBundleBytes ?? 128 * 1024 * 1024,
    log,
    onFallback: (operation) => metrics.recordFallback(operation),
  });
  const reporter = new StatusReporter({
    bird,
    send: (report) => client.reportStatus(report),
    readApplied: () => state.readApplied(),
    speakerId,
    agentVersion: deps.version,
    clock,
    log,
    metrics,
  });
  const loop = new SyncLoop({
    client,
    state,
    reporter,
    bird,
    runner: deps.runner ?? createProcessRunner(),
    birdBin: config.birdBin,
    birdVersion: () => bird.version(),
    metrics,
    clock,
    log,
    speakerId,
    tenantId,
    birdMode: config.birdMode,
    birdConfigPath: config.birdConfigPath,
    stagingDir: join(config.stateDir, "staging"),
    healthWaitMs: config.healthWaitSeconds * 1000,
    controllerHealth: (timeoutMs) => http.health(timeoutMs),
    maxBundleBytes: tuning.maxBundleBytes,
    retry: tuning.retry,
  });
  await loop.restoreConfirmedFiles().catch((error: unknown) => log.warn("could not check the files on disk", errorFields(error)));

  const livePolls = new LivePollAnswerer({ report: (pollId) => reporter.report("live_poll", { pollId }), minIntervalMs: 1000, clock });
  const onNotification = (n: AgentNotification, reason: "watch" | "nats") => {
    if (n.type === "new_revision") {
      if (n.speaker_id && n.speaker_id !== speakerId) return log.warn("notification for another speaker ignored", { speaker_id: n.speaker_id });
      loop.trigger({ reason, desired: { revision_id: n.revision_id, digest: n.digest, sequence: n.sequence, issued_at: null } });
    } else if (n.type === "live_poll") {
      livePolls.poll(n.poll_id);
    }
  };
  const watch = grpc?.watch({ onNotification: (n) => onNotification(n, "watch"), onConnected: () => loop.trigger({ reason: "watch" }) }, async () => {
    const applied = await state.readApplied().catch(() => null);
    return { speaker_id: speakerId, agent_version: deps.version, applied_revision_id: applied?.revision_id ?? 0, applied_sequence: applied?.sequence ?? 0 };
  });
  const natsUrl = config.natsUrl ?? identity.nats_url ?? undefined;
  const natsCreds = natsUrl ? await readNatsCredentials(config.stateDir, config.natsCreds) : null;
  const nats = natsUrl
    ? startNatsWakeups({
        url: natsUrl,
        creds: natsCreds,
        tenantId,
        speakerId,
        clock,
        log,
        onWake: (n) => (n ? onNotification(n, "nats") : loop.trigger({ reason: "nats" })),
        accept: async (value) => {
          const checked = verifyNotification(value, { tenantId, speakerId, keys: await state.readSigningKeys(), now: clock.now() });
          return checked.ok ? notificationFromJson(checked.body) : null;
        },
      })
    : null;
  const poll = startPeriodic(
    async () => {
      const desired = await client.latest();
      if (desired) loop.trigger({ reason: "poll", desired });
      return true;
    },
    { intervalMs: config.pollSeconds * 1000, clock },
  );
  const sessions = startPeriodic(() => reporter.checkSessions(), { intervalMs: tuning.sessionCheckMs ?? 10_000, clock });

  loop.trigger({ reason: "start" });
  void reporter.report("started");

  return {
    identity,
    loop,
    reporter,
    metrics,
    client,
    metricsServer,
    async stop() {
      await Promise.all([poll.stop(), sessions.stop(), watch?.stop(), nats?.close()]);
      await loop.stop();
      grpc?.close();
      bird.close();
      await metricsServer?.close();
      log.info("agent stopped");
    },
  };
}
