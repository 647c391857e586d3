import { UnauthenticatedError } from "@rlc/shared/errors";
import { type ApiKeyAuthRow, findApiKeysByPrefixes, touchApiKeysLastUsed } from "../../db/api-keys.js";
import type { Db } from "../../db/connect.js";
import { createBatcher } from "../../lib/batcher.js";
import { parseKeySecret, secretMatches } from "../../lib/key-secret.js";
import type { Principal, RoleName } from "./context.js";

export interface Authenticator {
  /** Resolves `Authorization: Bearer <key>` to a principal, or throws 401. */
  authenticate(header: string | undefined, now: Date): Promise<Principal>;
  /**
   * The same, answered at once (a principal, or a 401 thrown) when the key's row is cached, and
   * as a promise only while it is being read: the HTTP hook's path, where a promise and its
   * microtask a request were a measurable share of a cached authentication. `now` in
   * milliseconds since the epoch: the hook makes no Date a request.
   */
  principalFor(header: string | undefined, now: number): Principal | Promise<Principal>;
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
  /**
   * `verified` remembers the secrets this row was already checked against: true for the current
   * secret, false for the previous one (still in its rotation grace). The SHA-256 of a key was
   * the largest cost of a cached authentication (measured with bench/lookup-latency.mjs); a
   * renewed or invalidated entry starts with an empty set, so a rotation or revocation is never
   * answered from it. Only secrets that matched are kept: every wrong one is hashed and compared
   * in constant time, as before.
   */
  type Entry = {
    row: Promise<ApiKeyAuthRow | null>;
    /** The row, once `row` has settled: read without waiting on the promise. */
    value: ApiKeyAuthRow | null;
    /** The row's principal, made on its first use and shared (frozen) by the requests after. */
    principal: Principal | null;
    at: number;
    settled: boolean;
    renewing: boolean;
    verified: Map<string, boolean>;
  };
  const rows = new Map<string, Entry>();
  /**
   * Headers that authenticated once, with the secret and prefix they carry, so a known header
   * skips the parsing. A Map compares a probe by its hash before its text, so looking up a
   * guess tells nothing about how close it came to a stored key.
   */
  const parsedHeaders = new Map<string, { secret: string; prefix: string }>();
  const touched = new Map<string, number>();
  /** Bumped by `invalidate`: a read begun before it must not put its answer back. */
  let generation = 0;
  // The keys read while a read is in flight are read together next, in one query: an apply's
  // agents fetch and report within a second, each with its own key and each past the TTL.
  const lookups = createBatcher<string, ApiKeyAuthRow | undefined>({
    run: async (prefixes) => {
      const rows = new Map((await findApiKeysByPrefixes(deps.sql, prefixes)).map((r) => [r.key_prefix, r]));
      return prefixes.map((p) => rows.get(p));
    },
  });
  // The same for the last-use writes (at most one a minute per key, off the request's path).
  const touches = createBatcher<{ id: string; at: Date }, void>({
    run: async (uses) => {
      await touchApiKeysLastUsed(deps.sql, uses);
      return [];
    },
  });

  function read(prefix: string, at: number): Entry {
    const entry: Entry = {
      row: lookups.add(prefix).then((r) => r ?? null),
      value: null,
      principal: null,
      at,
      settled: false,
      renewing: false,
      verified: new Map(),
    };
    const begun = generation;
    // Past its TTL an entry answers nothing (entryFor reads the key again), so it is dropped
    // then rather than kept until the next request of its key: an agent authenticates once
    // every Watch PING (25 s), and a thousand agents' rows, their Dates and key hashes would
    // otherwise stay in memory between two PINGs.
    setTimeout(() => {
      if (rows.get(prefix) === entry) rows.delete(prefix);
    }, ttl).unref();
    entry.row.then(
      (row) => {
        entry.value = row;
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
  function entryFor(prefix: string): Entry {
    const hit = rows.get(prefix);
    const t = Date.now();
    if (hit && t - hit.at < ttl) {
      if (hit.settled && !hit.renewing && t - hit.at >= ttl / 2) {
        hit.renewing = true;
        read(prefix, t).row.catch(() => {
          hit.renewing = false;
        });
      }
      return hit;
    }
    if (rows.size > 10_000) rows.clear(); // bounded: a flood of unknown prefixes cannot grow it
    const entry = read(prefix, t);
    rows.set(prefix, entry);
    return entry;
  }

  function parse(header: string | undefined): { secret: string; prefix: string } | null {
    if (!header) return null;
    const known = parsedHeaders.get(header);
    if (known) return known;
    const secret = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    const parsed = secret ? parseKeySecret(secret) : null;
    return secret && parsed ? { secret, prefix: parsed.prefix } : null;
  }

  /** true: `secret` is the row's current secret; false: its previous one, within the grace; null: neither. */
  function matchOf(entry: Entry, row: ApiKeyAuthRow, secret: string, now: number): boolean | null {
    const inGrace = row.previous_valid_until !== null && row.previous_valid_until.getTime() > now;
    const known = entry.verified.get(secret);
    if (known !== undefined) return known || inGrace ? known : null;
    let match: boolean | null = null;
    if (secretMatches(secret, row.secret_hash)) match = true;
    else if (inGrace && secretMatches(secret, row.previous_secret_hash)) match = false;
    if (match !== null) entry.verified.set(secret, match);
    return match;
  }

  /** The principal of `row` for this request, or a 401: validity is judged against `now` on every request. */
  function admit(entry: Entry, row: ApiKeyAuthRow | null, header: string, parsed: { secret: string; prefix: string }, now: number): Principal {
    if (!row || row.revoked_at !== null || (row.expires_at !== null && row.expires_at.getTime() <= now)) throw new UnauthenticatedError();
    if (matchOf(entry, row, parsed.secret, now) === null) throw new UnauthenticatedError();
    if (!parsedHeaders.has(header)) {
      if (parsedHeaders.size > 10_000) parsedHeaders.clear();
      parsedHeaders.set(header, parsed);
    }
    const last = touched.get(row.id);
    if (last === undefined || Math.abs(now - last) >= LAST_USED_EVERY_MS) {
      touched.set(row.id, now);
      if (touched.size > 10_000) touched.clear();
      // Off the request's path: a failed touch must not fail the request.
      touches.add({ id: row.id, at: new Date(now) }).catch(() => {});
    }
    entry.principal ??= Object.freeze({
      tenantId: row.tenant_id,
      tenantName: row.tenant_name,
      role: row.role as RoleName,
      keyId: row.id,
      keyPrefix: row.key_prefix,
      speakerId: row.speaker_id,
    });
    return entry.principal;
  }

  function principalFor(header: string | undefined, now: number): Principal | Promise<Principal> {
    const parsed = parse(header);
    if (!header || !parsed) throw new UnauthenticatedError();
    const entry = entryFor(parsed.prefix);
    if (entry.settled) return admit(entry, entry.value, header, parsed, now);
    return entry.row.then((row) => admit(entry, row, header, parsed, now));
  }

  return {
    async authenticate(header, now) {
      return principalFor(header, now.getTime());
    },
    principalFor,
    invalidate() {
      generation++;
      rows.clear();
    },
  };
}
