import { describe, expect, it } from "vitest";
import type { Db } from "../db/connect.js";
import { hashKeySecret, newKeyPrefix, newKeySecret } from "../lib/key-secret.js";
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
  return { sql, stats };
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
