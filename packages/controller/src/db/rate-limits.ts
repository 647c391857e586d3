import type { Db } from "./connect.js";

/**
 * Adds `now` to the bucket's hits when fewer than `limit` fall after `since`, dropping the older
 * ones. The upsert locks the row, so concurrent callers count one after the other. False when the
 * limit is reached (nothing is written then).
 */
export async function takeRateLimitHit(db: Db, q: { tenantId: string; bucket: string; limit: number; since: Date; now: Date }): Promise<boolean> {
  const rows = await db`
    INSERT INTO rate_limits AS r (tenant_id, bucket, hits) VALUES (${q.tenantId}, ${q.bucket}, ARRAY[${q.now}::timestamptz])
    ON CONFLICT (tenant_id, bucket) DO UPDATE
      SET hits = coalesce((SELECT array_agg(h ORDER BY h) FROM unnest(r.hits) AS h WHERE h > ${q.since}::timestamptz), '{}') || ${q.now}::timestamptz
      WHERE (SELECT count(*) FROM unnest(r.hits) AS h WHERE h > ${q.since}::timestamptz) < ${q.limit}
    RETURNING 1`;
  return rows.length === 1;
}

export async function oldestRateLimitHit(db: Db, tenantId: string, bucket: string, since: Date): Promise<Date | null> {
  const [row] = await db<{ oldest: Date | null }[]>`
    SELECT (SELECT min(h) FROM unnest(hits) AS h WHERE h > ${since}::timestamptz) AS oldest
    FROM rate_limits WHERE tenant_id = ${tenantId} AND bucket = ${bucket}`;
  return row?.oldest ?? null;
}
