
import { UnauthenticatedError } from "@rlc/shared/errors";
import { type ApiKeyAuthRow, findApiKeyByPrefix, touchApiKeyLastUsed } from "../db/api-keys.js";
import type { Db } from "../db/connect.js";
import { parseKeySecret, secretMatches } from "../lib/key-secret.js";
import type { Principal, RoleName } from "./context.js";

export interface Authenticator {
  /** Resolves `Authorization: Bearer <key>` to a principal, or throws 401. */
  authenticate(header: string | undefined, now: Date): Promise<Principal>;
  /** Forgets every cached key: called by every change to a key (update, revoke, rotate). */
  invalidate(): void;
}

const LAST_USED_EVERY_MS = 60_000;

/**
 * Key checks with a short cache. Every /v1 request authenticates, and the lookup plus the
 * last-used update were two queries a request: measured, they capped every route near 3,000
 * req/s on this 2-core machine (bench/refresh-lookup.mjs prints it). A key row is kept for
 * `ttlMs` (1 s): a change made through this process invalidates at once; one made through
 * another replica is seen within the TTL. Validity (revoked, expiry, rotation grace) is judged
 * against the clock on every request, so a cached row never outlives its key's expiry.
 */
export function createAuthenticator(deps: { sql: Db; ttlMs?: number }): Authenticator {
  const ttl = deps.ttlMs ?? 1000;
  const rows = new Map<string, { row: Promise<ApiKeyAuthRow | null>; at: number }>();
  const touched = new Map<string, number>();

  // The promise is cached, not the row: when a key's entry expires under load, the requests
  // that arrive while it is being read again share that one query instead of each sending
  // their own (measured: the herd at every expiry set the p99 of every authenticated route).
  function rowFor(prefix: string): Promise<ApiKeyAuthRow | null> {
    const hit = rows.get(prefix);
    const t = Date.now();
    if (hit && t - hit.at < ttl) return hit.row;
    if (rows.size > 10_000) rows.clear(); // bounded: a flood of unknown prefixes cannot grow it
    const row = findApiKeyByPrefix(deps.sql, prefix).then((r) => r ?? null);
    const entry = { row, at: t };
    rows.set(prefix, entry);
    // A failed read is not remembered: the next request asks again.
    row.catch(() => {
      if (rows.get(prefix) === entry) rows.delete(prefix);
    });
    return row;
  }

  return {
    async authenticate(header, now) {
      const m = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
      const secret = m?.[1];
      const parsed = secret ? parseKeySecret(secret) : null;
      if (!secret || !parsed) throw new UnauthenticatedError();
      const row = await rowFor(parsed.prefix);
      if (!row || row.revoked_at !== null || (row.expires_at !== null && row.expires_at <= now)) throw new UnauthenticatedError();
      const current = secretMatches(secret, row.secret_hash);
      const inGrace =
        !current && row.previous_valid_until !== null && row.previous_valid_until > now && secretMatches(secret, row.previous_secret_hash);
      if (!current && !inGrace) throw new UnauthenticatedError();
      const last = touched.get(row.id);
      if (last === undefined || Math.abs(now.getTime() - last) >= LAST_USED_EVERY_MS) {
        touched.set(row.id, now.getTime());
        if (touched.size > 10_000) touched.clear();
        // Off the request's path: a failed touch must not fail the request.
        touchApiKeyLastUsed(deps.sql, row.id, now).catch(() => {});
      }
      return {
        tenantId: row.tenant_id,
        tenantName: row.tenant_name,
        role: row.role as RoleName,
        keyId: row.id,
        keyPrefix: row.key_prefix,
        speakerId: row.speaker_id,
      };
    },
    invalidate() {
      rows.clear();
    },
  };
}

