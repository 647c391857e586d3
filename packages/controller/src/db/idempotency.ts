import type { Db } from "./connect.js";

/** Whose stored answers: the tenant and the API key that made the request. */
export interface IdempotencyScope {
  tenantId: string;
  apiKeyId: string;
}

export interface IdempotencyRow {
  request_hash: string;
  status_code: number;
  /** The answer's JSON, sealed with the data key; null for an answer without a body. */
  response_body: string | null;
  response_headers: Record<string, string>;
  /** The key's role when the answer was made. */
  role: string;
  created_at: Date;
}

/**
 * The in-flight claim: a transaction-scoped advisory lock on (tenant, API key, key). It is
 * released by commit or rollback, and by the server when the session dies, so a crashed request
 * never blocks its retry for longer than the connection takes to drop (idle-in-transaction timeout).
 */
export async function tryClaimIdempotencyKey(db: Db, scope: IdempotencyScope, key: string): Promise<boolean> {
  const [row] = await db<{ locked: boolean }[]>`
    SELECT pg_try_advisory_xact_lock(hashtextextended(${`idem:${scope.tenantId}:${scope.apiKeyId}:${key}`}, 0)) AS locked`;
  return row?.locked === true;
}

export async function findIdempotencyRecord(db: Db, scope: IdempotencyScope, key: string, notBefore: Date): Promise<IdempotencyRow | undefined> {
  const [row] = await db<IdempotencyRow[]>`
    SELECT request_hash, status_code, response_body, response_headers, role, created_at FROM idempotency_keys
    WHERE tenant_id = ${scope.tenantId} AND api_key_id = ${scope.apiKeyId} AND key = ${key} AND created_at >= ${notBefore}`;
  return row;
}

export async function upsertIdempotencyRecord(db: Db, scope: IdempotencyScope, key: string, row: IdempotencyRow): Promise<void> {
  await db`
    INSERT INTO idempotency_keys (tenant_id, api_key_id, key, request_hash, status_code, response_body, response_headers, role, created_at)
    VALUES (${scope.tenantId}, ${scope.apiKeyId}, ${key}, ${row.request_hash}, ${row.status_code}, ${row.response_body},
            ${db.json(row.response_headers)}, ${row.role}, ${row.created_at})
    ON CONFLICT (tenant_id, api_key_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status_code = EXCLUDED.status_code,
      response_body = EXCLUDED.response_body, response_headers = EXCLUDED.response_headers, role = EXCLUDED.role,
      created_at = EXCLUDED.created_at`;
}

export async function deleteExpiredIdempotencyRecords(db: Db, before: Date): Promise<number> {
  const rows = await db`DELETE FROM idempotency_keys WHERE created_at < ${before} RETURNING key`;
  return rows.length;
}
