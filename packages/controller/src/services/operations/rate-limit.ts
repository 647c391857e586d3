import { AppError } from "@rlc/shared/errors";
import type { Db } from "../../db/connect.js";
import { oldestRateLimitHit, takeRateLimitHit } from "../../db/rate-limits.js";

export interface RateLimit {
  bucket: string;
  limit: number;
  windowMs: number;
  /** Whose calls the window counts, for the refusal's text (default "per tenant"). */
  per?: string;
}

/** CDN preview is limited to 10 calls a minute per tenant. */
export const CDN_PREVIEW_LIMIT: RateLimit = { bucket: "cdn_preview", limit: 10, windowMs: 60_000 };

/**
 * ANALYZE reads every table of the shared database: once a minute for the whole deployment. Only
 * keys of the deployment's tenant reach it, so that tenant's bucket is the deployment's.
 */
export const DB_ANALYZE_LIMIT: RateLimit = { bucket: "db_analyze", limit: 1, windowMs: 60_000, per: "for the whole deployment" };

/**
 * Counts one call against a sliding window kept in PostgreSQL (so every controller process
 * shares it), or throws 429 `rate_limited` with `Retry-After` without counting the refused call.
 */
export async function takeRateLimit(db: Db, tenantId: string, rule: RateLimit, now: Date): Promise<void> {
  const since = new Date(now.getTime() - rule.windowMs);
  if (await takeRateLimitHit(db, { tenantId, bucket: rule.bucket, limit: rule.limit, since, now })) return;
  const oldest = (await oldestRateLimitHit(db, tenantId, rule.bucket, since)) ?? now;
  const retryAfter = Math.max(1, Math.ceil((oldest.getTime() + rule.windowMs - now.getTime()) / 1000));
  const calls = rule.limit === 1 ? "1 call" : `${rule.limit} calls`;
  throw new AppError("rate_limited", `at most ${calls} a minute ${rule.per ?? "per tenant"}; retry in ${retryAfter} s`, {
    headers: { "retry-after": String(retryAfter) },
  });
}
