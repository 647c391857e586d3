import type { Db } from "./connect.js";
import { type KeysetPage, tenantTable, whereEquals } from "./tenant-table.js";

export interface ApiKeyRow {
  id: string;
  tenant_id: string;
  name: string;
  role: string;
  key_prefix: string;
  secret_hash: Buffer;
  previous_secret_hash: Buffer | null;
  previous_valid_until: Date | null;
  speaker_id: string | null;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface ApiKeyAuthRow extends ApiKeyRow {
  tenant_name: string;
}

export async function insertApiKey(db: Db, row: ApiKeyRow): Promise<void> {
  await db`
    INSERT INTO api_keys (id, tenant_id, name, role, key_prefix, secret_hash, speaker_id, expires_at, created_at, updated_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.name}, ${row.role}, ${row.key_prefix}, ${row.secret_hash},
            ${row.speaker_id}, ${row.expires_at}, ${row.created_at}, ${row.updated_at})`;
}

/** The authentication lookup: by the prefix that every secret carries, across tenants; several at once, in any order. */
export async function findApiKeysByPrefixes(db: Db, prefixes: string[]): Promise<ApiKeyAuthRow[]> {
  if (!prefixes.length) return [];
  return db<ApiKeyAuthRow[]>`
    SELECT k.*, t.name AS tenant_name FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
    WHERE k.key_prefix = ANY(${prefixes}::text[])`;
}

const keys = tenantTable<ApiKeyRow>("api_keys");

export const findApiKeyById = keys.findById;

export function listApiKeys(db: Db, tenantId: string, opts: KeysetPage & { role?: string | undefined }): Promise<ApiKeyRow[]> {
  return keys.list(db, tenantId, opts, whereEquals(db, "role", opts.role));
}

export function updateApiKey(db: Db, tenantId: string, id: string, patch: Pick<ApiKeyRow, "name" | "role" | "expires_at" | "updated_at">): Promise<ApiKeyRow> {
  const set = db`name = ${patch.name}, role = ${patch.role}, expires_at = ${patch.expires_at}, updated_at = ${patch.updated_at}`;
  return keys.update(db, tenantId, id, set);
}

export function revokeApiKey(db: Db, tenantId: string, id: string, at: Date): Promise<ApiKeyRow> {
  return keys.update(db, tenantId, id, db`revoked_at = ${at}, updated_at = ${at}, previous_secret_hash = NULL, previous_valid_until = NULL`);
}

export async function revokeApiKeysBySpeaker(db: Db, tenantId: string, speakerId: string, at: Date): Promise<number> {
  const rows = await db`
    UPDATE api_keys SET revoked_at = ${at}, updated_at = ${at}
    WHERE tenant_id = ${tenantId} AND speaker_id = ${speakerId} AND revoked_at IS NULL RETURNING id`;
  return rows.length;
}

/** The speaker's node keys that still authenticate (not revoked, not expired). */
export async function countLiveNodeKeys(db: Db, tenantId: string, speakerId: string, now: Date): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    SELECT count(*)::int AS n FROM api_keys
    WHERE tenant_id = ${tenantId} AND speaker_id = ${speakerId} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${now})`;
  return row?.n ?? 0;
}

/** The old secret keeps working until `previous_valid_until`; without one it stops at once. */
export function rotateApiKeySecret(
  db: Db,
  tenantId: string,
  id: string,
  next: { secret_hash: Buffer; previous_valid_until: Date | null; updated_at: Date },
): Promise<ApiKeyRow> {
  const set = db`
    previous_secret_hash = CASE WHEN ${next.previous_valid_until}::timestamptz IS NULL THEN NULL ELSE secret_hash END,
    previous_valid_until = ${next.previous_valid_until},
    secret_hash = ${next.secret_hash},
    updated_at = ${next.updated_at}`;
  return keys.update(db, tenantId, id, set);
}

/** Each key's last use, at most one write a minute per key whatever the request rate; several keys in one statement. */
export async function touchApiKeysLastUsed(db: Db, uses: { id: string; at: Date }[]): Promise<void> {
  if (!uses.length) return;
  await db`
    UPDATE api_keys k SET last_used_at = u.at
    FROM unnest(${uses.map((u) => u.id)}::uuid[], ${uses.map((u) => u.at.toISOString())}::timestamptz[]) AS u(id, at)
    WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at - interval '1 minute')`;
}
