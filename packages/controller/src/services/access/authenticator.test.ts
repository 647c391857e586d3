import { describe, expect, it } from "vitest";
import type { Db } from "../../db/connect.js";
import { hashKeySecret, newKeyPrefix, newKeySecret } from "../../lib/key-secret.js";
import { createAuthenticator } from "./authenticator.js";

/** A database that answers the key lookup after `delayMs` and counts the queries it got. */
function keyDatabase(secret: string, prefix: string, delayMs = 20) {
  const stats = { queries: 0 };
  const row = {
    id: "k1",
    tenant_id: "t1",
    tenant_name: "default",
    role: "viewer",
    key_prefix: prefix,
    speaker_id: null,
    secret_hash: hashKeySecret(secret),
    previous_secret_hash: null,
    previous_valid_until: null,
    revoked_at: null,
    expires_at: null,
  };
  const sql = ((strings: TemplateStringsArray) => {
    if (/SELECT k\.\*/.test(strings.join("?"))) stats.queries++;
    return new Promise((resolve) => setTimeout(() => resolve(/SELECT k\.\*/.test(strings.join("?")) ? [row] : []), delayMs));
  }) as unknown as Db;
  return { sql, stats, row };
}

describe("authenticator", () => {
  it("requests that arrive while a key's entry is being read share that one query", async () => {
    const prefix = newKeyPrefix();
    const secret = newKeySecret(prefix);
    const { sql, stats } = keyDatabase(secret, prefix);
    const auth = createAuthenticator({ sql, ttlMs: 1000 });
    const principals = await Promise.all(Array.from({ length: 50 }, () => auth.authenticate(`Bearer ${secret}`, new Date())));
    expect(principals.every((p) => p.keyId === "k1")).toBe(true);
    expect(stats.queries).toBe(1);
  });

  it("reads the key again once its entry is older than the TTL, and after an invalidation", async () => {
    const prefix = newKeyPrefix();
    const secret = newKeySecret(prefix);
    const { sql, stats } = keyDatabase(secret, prefix, 1);
    const auth = createAuthenticator({ sql, ttlMs: 30 });
    await auth.authenticate(`Bearer ${secret}`, new Date());
    await new Promise((r) => setTimeout(r, 50));
    await auth.authenticate(`Bearer ${secret}`, new Date());
    expect(stats.queries).toBe(2);
    auth.invalidate();
    await auth.authenticate(`Bearer ${secret}`, new Date());
    expect(stats.queries).toBe(3);
  });
});

/** A database whose key reads wait until the test answers them, one by one. */
function heldDatabase(secret: string, prefix: string) {
  const pending: ((rows: unknown[]) => void)[] = [];
  const row = { ...keyDatabase(secret, prefix).row, role: "viewer" };
  const sql = ((strings: TemplateStringsArray) => {
    if (!/SELECT k\.\*/.test(strings.join("?"))) return Promise.resolve([]);
    return new Promise((resolve) => pending.push(resolve));
  }) as unknown as Db;
  return { sql, pending, answer: (r: object = row) => pending.shift()?.([r]) };
}

const within = <T>(p: Promise<T>, ms = 500) =>
  Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms))]);

/**
 * An authenticator (TTL 200 ms) over a held database whose first read of a key was answered,
 * 120 ms later: past half the TTL, before its end, so the next request starts a renewal.
 */
async function cachedPastHalfTtl() {
  const prefix = newKeyPrefix();
  const secret = newKeySecret(prefix);
  const db = heldDatabase(secret, prefix);
  const auth = createAuthenticator({ sql: db.sql, ttlMs: 200 });
  const pending = auth.authenticate(`Bearer ${secret}`, new Date());
  db.answer();
  const first = await pending;
  await new Promise((r) => setTimeout(r, 120));
  return { prefix, secret, db, auth, first };
}

describe("authenticator, a cached key", () => {
  it("is answered at once, not as a promise, with its expiry judged against each request's time; after an invalidation it is read again", async () => {
    const prefix = newKeyPrefix();
    const secret = newKeySecret(prefix);
    const { sql, stats, row } = keyDatabase(secret, prefix, 1);
    const expiry = new Date(Date.now() + 60_000);
    row.expires_at = expiry as never;
    const auth = createAuthenticator({ sql, ttlMs: 10_000 });
    expect(auth.principalFor(`Bearer ${secret}`, Date.now())).toBeInstanceOf(Promise); // the first read
    await auth.authenticate(`Bearer ${secret}`, new Date());
    const principal = auth.principalFor(`Bearer ${secret}`, Date.now());
    expect(principal).not.toBeInstanceOf(Promise);
    expect(principal).toMatchObject({ keyId: "k1", tenantId: "t1", role: "viewer" });
    // The request's time is a number of milliseconds: valid up to the millisecond before the expiry.
    expect(auth.principalFor(`Bearer ${secret}`, expiry.getTime() - 1)).toBe(principal);
    expect(() => auth.principalFor(`Bearer ${secret}`, expiry.getTime())).toThrow(expect.objectContaining({ code: "unauthenticated" }));
    expect(() => auth.principalFor(`Bearer ${newKeySecret(prefix)}`, Date.now())).toThrow(expect.objectContaining({ code: "unauthenticated" }));
    expect(stats.queries).toBe(1);
    auth.invalidate(); // e.g. the key was revoked through this process
    expect(auth.principalFor(`Bearer ${secret}`, Date.now())).toBeInstanceOf(Promise);
    expect(stats.queries).toBe(2);
  });
});

describe("authenticator renewal", () => {
  it("past half its TTL a key is read again in the background while the cached row answers", async () => {
    const { prefix, secret, db, auth, first } = await cachedPastHalfTtl();
    expect(first.keyId).toBe("k1");
    // The renewal's read is held open: the request is still answered from the cache.
    expect((await within(auth.authenticate(`Bearer ${secret}`, new Date()))).keyId).toBe("k1");
    expect(db.pending).toHaveLength(1);
    // Concurrent requests share that one renewal.
    await within(auth.authenticate(`Bearer ${secret}`, new Date()));
    expect(db.pending).toHaveLength(1);
    // The renewal says the key is revoked: from then on it is refused.
    db.answer({ ...keyDatabase(secret, prefix).row, revoked_at: new Date(0) });
    await new Promise((r) => setTimeout(r, 5));
    await expect(auth.authenticate(`Bearer ${secret}`, new Date())).rejects.toMatchObject({ code: "unauthenticated" });
  });

  it("a renewal begun before an invalidation does not put its older answer back", async () => {
    const { prefix, secret, db, auth } = await cachedPastHalfTtl();
    await within(auth.authenticate(`Bearer ${secret}`, new Date())); // starts the renewal
    auth.invalidate(); // e.g. the key was revoked through this process
    db.answer(); // the renewal read before the revocation answers "valid"
    await new Promise((r) => setTimeout(r, 5));
    const after = auth.authenticate(`Bearer ${secret}`, new Date());
    expect(db.pending).toHaveLength(1); // asked the database again instead of using that answer
    db.answer({ ...keyDatabase(secret, prefix).row, revoked_at: new Date(0) });
    await expect(after).rejects.toMatchObject({ code: "unauthenticated" });
  });
});

describe("authenticator, a secret checked before", () => {
  it("the previous secret of a rotated key is refused once its grace ends, though it was accepted during it", async () => {
    const prefix = newKeyPrefix();
    const [old, current] = [newKeySecret(prefix), newKeySecret(prefix)];
    const { sql, row } = keyDatabase(current, prefix, 1);
    const until = new Date(Date.now() + 60_000);
    Object.assign(row, { previous_secret_hash: hashKeySecret(old), previous_valid_until: until });
    const auth = createAuthenticator({ sql, ttlMs: 60_000 });
    expect((await auth.authenticate(`Bearer ${old}`, new Date())).keyId).toBe("k1");
    expect((await auth.authenticate(`Bearer ${old}`, new Date())).keyId).toBe("k1");
    const later = new Date(until.getTime() + 1);
    await expect(auth.authenticate(`Bearer ${old}`, later)).rejects.toMatchObject({ code: "unauthenticated" });
    expect((await auth.authenticate(`Bearer ${current}`, later)).keyId).toBe("k1");
  });

  it("after a rotation through this process the old secret is refused at once, and a wrong secret of the same prefix always", async () => {
    const prefix = newKeyPrefix();
    const [old, rotated, wrong] = [newKeySecret(prefix), newKeySecret(prefix), newKeySecret(prefix)];
    const { sql, row } = keyDatabase(old, prefix, 1);
    const auth = createAuthenticator({ sql, ttlMs: 60_000 });
    expect((await auth.authenticate(`Bearer ${old}`, new Date())).keyId).toBe("k1");
    await expect(auth.authenticate(`Bearer ${wrong}`, new Date())).rejects.toMatchObject({ code: "unauthenticated" });
    row.secret_hash = hashKeySecret(rotated); // rotated without a grace period
    auth.invalidate();
    await expect(auth.authenticate(`Bearer ${old}`, new Date())).rejects.toMatchObject({ code: "unauthenticated" });
    expect((await auth.authenticate(`Bearer ${rotated}`, new Date())).keyId).toBe("k1");
    await expect(auth.authenticate(`Bearer ${wrong}`, new Date())).rejects.toMatchObject({ code: "unauthenticated" });
  });
});

describe("authenticator, many keys at once", () => {
  /** A database holding `n` keys whose reads wait until the test answers them; it records each query's prefixes and each last-use write. */
  function manyKeys(n: number) {
    const keys = Array.from({ length: n }, (_, i) => {
      const prefix = newKeyPrefix();
      const secret = newKeySecret(prefix);
      return { prefix, secret, row: { ...keyDatabase(secret, prefix).row, id: `k${i}` } };
    });
    const reads: string[][] = [];
    const touches: string[][] = [];
    const held: (() => void)[] = [];
    const sql = ((strings: TemplateStringsArray, ...values: unknown[]) => {
      const text = strings.join("?");
      if (/UPDATE api_keys/.test(text)) touches.push(values[0] as string[]);
      if (!/SELECT k\.\*/.test(text)) return Promise.resolve([]);
      const prefixes = values.find(Array.isArray) as string[];
      reads.push(prefixes);
      return new Promise((resolve) => held.push(() => resolve(keys.filter((k) => prefixes.includes(k.prefix)).map((k) => k.row))));
    }) as unknown as Db;
    return { keys, sql, reads, touches, answer: () => held.shift()?.() };
  }

  it("the keys asked for while a read is in flight are read together in one query, and their last uses written in one statement", async () => {
    const db = manyKeys(4);
    const auth = createAuthenticator({ sql: db.sql, ttlMs: 1000 });
    const principals = db.keys.map((k) => auth.authenticate(`Bearer ${k.secret}`, new Date()));
    expect(db.reads).toEqual([[db.keys[0]!.prefix]]); // the first at once, alone
    db.answer();
    await new Promise((r) => setTimeout(r, 5));
    expect(db.reads).toEqual([[db.keys[0]!.prefix], db.keys.slice(1).map((k) => k.prefix)]);
    db.answer();
    expect((await Promise.all(principals)).map((p) => p.keyId)).toEqual(["k0", "k1", "k2", "k3"]);
    await new Promise((r) => setTimeout(r, 5));
    // Each key written once; the uses that came while a write was in flight shared the next.
    expect(db.touches.flat().sort()).toEqual(["k0", "k1", "k2", "k3"]);
    expect(db.touches.length).toBeLessThan(4);
  });

  it("a key that is not there is refused, and only it, when read together with others", async () => {
    const db = manyKeys(3);
    const auth = createAuthenticator({ sql: db.sql, ttlMs: 1000 });
    const unknownPrefix = newKeyPrefix();
    const first = auth.authenticate(`Bearer ${db.keys[0]!.secret}`, new Date());
    const together = [auth.authenticate(`Bearer ${newKeySecret(unknownPrefix)}`, new Date()), auth.authenticate(`Bearer ${db.keys[1]!.secret}`, new Date())];
    db.answer();
    await first;
    db.answer();
    await expect(together[0]).rejects.toMatchObject({ code: "unauthenticated" });
    expect((await together[1]!).keyId).toBe("k1");
    expect(db.reads[1]).toEqual([unknownPrefix, db.keys[1]!.prefix]);
  });
});
