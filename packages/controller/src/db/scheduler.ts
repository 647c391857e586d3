import type { Db } from "./connect.js";

export const NO_TENANT = "00000000-0000-0000-0000-000000000000";

export async function findLastRun(db: Db, task: string, tenantId: string): Promise<Date | null> {
  const [row] = await db<{ last_run_at: Date }[]>`SELECT last_run_at FROM scheduler_runs WHERE task = ${task} AND tenant_id = ${tenantId}`;
  return row?.last_run_at ?? null;
}

export async function recordRun(db: Db, task: string, tenantId: string, at: Date): Promise<void> {
  await db`
    INSERT INTO scheduler_runs (task, tenant_id, last_run_at) VALUES (${task}, ${tenantId}, ${at})
    ON CONFLICT (task, tenant_id) DO UPDATE SET last_run_at = EXCLUDED.last_run_at`;
}

export async function listTenantIdsWithSettings(db: Db): Promise<{ tenant_id: string; settings: Record<string, unknown> }[]> {
  return db<{ tenant_id: string; settings: Record<string, unknown> }[]>`
    SELECT t.id AS tenant_id, COALESCE(s.settings, '{}'::jsonb) AS settings FROM tenants t LEFT JOIN tenant_settings s ON s.tenant_id = t.id`;
}
