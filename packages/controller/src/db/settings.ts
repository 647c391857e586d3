import type { Db } from "./connect.js";

export interface SettingsRow {
  settings: Record<string, unknown>;
  updated_at: Date | null;
}

export async function findSettings(db: Db, tenantId: string, forUpdate = false): Promise<SettingsRow> {
  const [row] = forUpdate
    ? await db<SettingsRow[]>`SELECT settings, updated_at FROM tenant_settings WHERE tenant_id = ${tenantId} FOR UPDATE`
    : await db<SettingsRow[]>`SELECT settings, updated_at FROM tenant_settings WHERE tenant_id = ${tenantId}`;
  return row ?? { settings: {}, updated_at: null };
}

export async function upsertSettings(db: Db, tenantId: string, settings: Record<string, unknown>, at: Date): Promise<SettingsRow> {
  const [row] = await db<SettingsRow[]>`
    INSERT INTO tenant_settings (tenant_id, settings, updated_at) VALUES (${tenantId}, ${db.json(settings as never)}, ${at})
    ON CONFLICT (tenant_id) DO UPDATE SET settings = EXCLUDED.settings, updated_at = EXCLUDED.updated_at
    RETURNING settings, updated_at`;
  return row!;
}

/** Makes sure the row exists so a later `FOR UPDATE` has something to lock. */
export async function ensureSettingsRow(db: Db, tenantId: string): Promise<void> {
  await db`INSERT INTO tenant_settings (tenant_id) VALUES (${tenantId}) ON CONFLICT DO NOTHING`;
}
