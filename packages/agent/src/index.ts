// @rlc/agent: what the tests and the benchmarks build on (the BIRD sequence itself is
// @rlc/shared/bird). The rl-agent command itself is main.ts.

export { type Clock, createSystemClock } from "@rlc/shared/time";
export { type AgentDeps, type RunningAgent, startAgent } from "./agent.js";
export { type ControllerClient, createControllerClient } from "./bundle/controller-client.js";
export { AgentGrpcClient, type WatchHandlers } from "./bundle/grpc-client.js";
export { ControllerError, type ControllerErrorCode, ControllerHttpClient, type DesiredRevision, type EnrollResult } from "./bundle/http-client.js";
export { startNatsWakeups } from "./bundle/nats-wakeups.js";
export { keysFromEnrollment, updatePinnedKeys } from "./bundle/signing-keys.js";
export { formatSessions, protocolsCommand, statusCommand } from "./commands.js";
export { type AgentConfig, ConfigError, loadConfig } from "./config.js";
export { enroll, ensureEnrolled, NotEnrolledError } from "./enroll.js";
export { AgentMetrics } from "./http/metrics.js";
export { type MetricsServer, startMetricsServer } from "./http/metrics-server.js";
export { createLogger, type Logger, silentLogger } from "./log.js";
export { type AppliedRecord, type NodeIdentity, type RefusedIssue, StateError, StateStore, type StoredKey } from "./state.js";
export { type BirdSnapshot, StatusReporter } from "./status/reporter.js";
export { classifyError, SyncError } from "./sync-errors.js";
export { SyncLoop, type SyncResult, type SyncTrigger } from "./sync-loop.js";
