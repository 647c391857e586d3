import type { Clock } from "@rlc/shared/time";
import type { Bus } from "./bus/index.js";
import type { Config } from "./config.js";
import type { Sql } from "./db/connect.js";
import type { BuildInfo } from "./lib/build-info.js";
import type { DatabaseHealth } from "./lib/database-health.js";
import type { ControllerMetrics } from "./metrics/controller-metrics.js";
import type { AppServices } from "./services/create-services.js";
import type { OutboundClient } from "./sources/outbound.js";

/** Everything the HTTP app needs; tests pass their own clock, database and bus. */
export interface AppDeps {
  config: Config;
  sql: Sql;
  clock: Clock;
  bus: Bus;
  buildInfo: BuildInfo;
  outbound: OutboundClient;
  services: AppServices;
  /** Whether the database answers (requests get 503 `database_unavailable` at once while it does not). */
  databaseHealth: DatabaseHealth;
  /** The public `/metrics` registry (deployment totals, the counters the workers feed) and the per-tenant `/v1/metrics`. */
  metrics: ControllerMetrics;
}
