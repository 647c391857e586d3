import { UnauthenticatedError } from "@rlc/shared/errors";
import { type ApiKeyAuthRow, findApiKeyByPrefix, touchApiKeyLastUsed } from "../../db/api-keys.js";
import type { Db } from "../../db/connect.js";
import { parseKeySecret, secretMatches } from "../../lib/key-secret.js";
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
  type Entry = { row: Promise<ApiKeyAuthRow | null>; at: number; settled: boolean; renewing: boolean };
  const rows = new Map<string, Entry>();
  const touched = new Map<string, number>();
  /** Bumped by `invalidate`: a read begun before it must not put its answer back. */
  let generation = 0;

  function read(prefix: string, at: number): Entry {
    const entry: Entry = { row: findApiKeyByPrefix(deps.sql, prefix).then((r) => r ?? null), at, settled: false, renewing: false };
    const begun = generation;
    entry.row.then(
      () => {
        entry.settled = true;
        if (begun !== generation) return;
        // A renewal replaces the entry only once it has its answer: until then the older,
        // still-valid one keeps answering.
        rows.set(prefix, entry);
      },
      // A failed read is not remembered: the next request asks again.
      () => {
        if (rows.get(prefix) === entry) rows.delete(prefix);
      },
    );
    return entry;
  }

  // The promise is cached, not the row: when a key's entry expires under load, the requests
  // that arrive while it is being read again share that one query instead of each sending
  // their own (measured: the herd at every expiry set the p99 of every authenticated route).
  // A key in use is read again ahead of time: past half its TTL, the request that notices
  // starts the read and is answered from the entry it has, so under steady traffic no request
  // waits for the database; an entry is still never used past its TTL.
  function rowFor(prefix: string): Promise<ApiKeyAuthRow | null> {
    const hit = rows.get(prefix);
    const t = Date.now();
    if (hit && t - hit.at < ttl) {
      if (hit.settled && !hit.renewing && t - hit.at >= ttl / 2) {
        hit.renewing = true;
        read(prefix, t).row.catch(() => {
          hit.renewing = false;
        });
      }
      return hit.row;
    }
    if (rows.size > 10_000) rows.clear(); // bounded: a flood of unknown prefixes cannot grow it
    const entry = read(prefix, t);
    rows.set(prefix, entry);
    return entry.row;
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
      const inGrace = !current && row.previous_valid_until !== null && row.previous_valid_until > now && secretMatches(secret, row.previous_secret_hash);
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
      generation++;
      rows.clear();
    },
  };
}
