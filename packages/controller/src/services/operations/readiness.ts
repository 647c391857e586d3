import type { Bus } from "../../bus/index.js";
import { pingDatabase, type Sql } from "../../db/connect.js";

/** GET /v1/ready: each dependency as "ok" or "down" (NATS as the bus reports it). */
export async function readinessChecks(deps: { sql: Sql; bus: Bus }): Promise<Record<string, string>> {
  const checks: Record<string, string> = {};
  try {
    await pingDatabase(deps.sql);
    checks.database = "ok";
  } catch {
    checks.database = "down";
  }
  checks.nats = deps.bus.health();
  return checks;
}
