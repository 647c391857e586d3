import type { Db } from "./connect.js";

export interface IdempotencyRow {
  request_hash: string;
  status_code: number;
  response_body: string | null;
  response_headers: Record<string, string>;
  created_at: Date;
}

/**
 * The in-flight claim: a transaction-scoped advisory lock on (tenant, key). It is released by
 * commit or rollback, and by the server when the session dies, so a crashed request never
 * blocks its retry for longer than the connection takes to drop (idle-in-transaction timeout).
 */
export async function tryClaimIdempotencyKey(db: Db, tenantId: string, key: string): Promise<boolean> {
  const [row] = await db<{ locked: boolean }[]>`
    SELECT pg_try_advisory_xact_lock(hashtextextended(${`idem:${tenantId}:${key}`}, 0)) AS locked`;
  return row?.locked === true;
}

export async function findIdempotencyRecord(db: Db, tenantId: string, key: string, notBefore: Date): Promise<IdempotencyRow | undefined> {
  const [row] = await db<IdempotencyRow[]>`
    SELECT request_hash, status_code, response_body, response_headers, created_at FROM idempotency_keys
    WHERE tenant_id = ${tenantId} AND key = ${key} AND created_at >= ${notBefore}`;
  return row;
}

export async function upsertIdempotencyRecord(
  db: Db,
  tenantId: string,
  key: string,
  row: IdempotencyRow,
): Promise<void> {
  await db`
    INSERT INTO idempotency_keys (tenant_id, key, request_hash, status_code, response_body, response_headers, created_at)
    VALUES (${tenantId}, ${key}, ${row.request_hash}, ${row.status_code}, ${row.response_body},
            ${db.json(row.response_headers)}, ${row.created_at})
    ON CONFLICT (tenant_id, key) DO UPDATE SET request_hash = EXCLUDED.request_hash, status_code = EXCLUDED.status_code,
      response_body = EXCLUDED.response_body, response_headers = EXCLUDED.response_headers, created_at = EXCLUDED.created_at`;
}

export async function deleteExpiredIdempotencyRecords(db: Db, before: Date): Promise<number> {
  const rows = await db`DELETE FROM idempotency_keys WHERE created_at < ${before} RETURNING key`;
  return rows.length;
}
