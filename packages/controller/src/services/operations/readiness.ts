import type { Bus } from "../../bus/index.js";
import type { DatabaseHealth } from "../../lib/database-health.js";

/** How long readiness waits on the database before it says "down". */
const READY_DB_TIMEOUT_MS = 1000;

/**
 * GET /v1/ready: each dependency as "ok" or "down" (NATS as the bus reports it). A database
 * known to be down is "down" without a query; otherwise it is asked, at most a second.
 */
export async function readinessChecks(deps: { bus: Bus; databaseHealth: DatabaseHealth }): Promise<Record<string, string>> {
  const checks: Record<string, string> = {};
  checks.database = !deps.databaseHealth.isDown() && (await deps.databaseHealth.check(READY_DB_TIMEOUT_MS)) ? "ok" : "down";
  checks.nats = deps.bus.health();
  return checks;
}
