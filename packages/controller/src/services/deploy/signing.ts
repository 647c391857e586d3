import { readFile } from "node:fs/promises";
import { generateSigningKey, type SigningKeyPair, signingKeyFromSeed, signKeyStatement } from "@rlc/shared/bundle";
import { ConflictError } from "@rlc/shared/errors";
import { ADVISORY_LOCKS, lockForTransaction } from "../../db/advisory-locks.js";
import type { Db, Sql } from "../../db/connect.js";
import {
  findActiveSigningKey,
  findSigningKey,
  insertSigningKey,
  listPlainSeeds,
  listSharedKeysWithSeed,
  listSigningKeys,
  listTenantsWithoutSigningKey,
  retireSigningKey,
  type SigningKeyRow,
  setSealedSeed,
} from "../../db/signing-keys.js";
import type { SecretBox } from "../../lib/secret-box.js";
import { isoRequired } from "../../lib/time.js";
import type { AuditWriter } from "../access/audit.js";
import type { RequestContext } from "../access/context.js";

export const toSigningKey = (r: SigningKeyRow) => ({
  key_id: r.key_id,
  alg: "ed25519" as const,
  public_key: r.public_key.toString("base64"),
  status: r.status,
  created_at: isoRequired(r.created_at),
  statement: r.statement,
});

/**
 * Bundle signing keys. Each tenant signs its bundles with its own Ed25519 key, generated on
 * first use and kept in the database with its seed sealed by the data key; a tenant's admin
 * rotates it. BUNDLE_SIGNING_KEY_FILE (a 32-byte seed, raw, hex or base64) instead pins one
 * deployment-wide key that signs for every tenant and cannot be rotated through the API.
 */
export function createSigningService(deps: { sql: Sql; audit: AuditWriter; secrets: SecretBox; keyFile?: string | undefined }) {
  let fileKey: Promise<SigningKeyPair> | null = null;
  const loadFileKey = async () => {
    const raw = await readFile(deps.keyFile!);
    const text = raw.toString("utf8").trim();
    const seed = raw.length === 32 ? raw : Buffer.from(text, /^[0-9a-f]{64}$/i.test(text) ? "hex" : "base64");
    if (seed.length !== 32) throw new Error("BUNDLE_SIGNING_KEY_FILE must hold a 32-byte Ed25519 seed (raw, hex or base64)");
    return signingKeyFromSeed(seed);
  };

  const pairOf = async (row: SigningKeyRow): Promise<SigningKeyPair> => {
    if (row.seed_sealed) return signingKeyFromSeed(deps.secrets.open(row.seed_sealed));
    if (row.seed) return signingKeyFromSeed(row.seed);
    throw new Error(`signing key ${row.key_id} has no seed`);
  };

  const storeKey = (tx: Db, tenantId: string, key: SigningKeyPair, statement: Record<string, unknown> | null, at: Date) =>
    insertSigningKey(tx, {
      key_id: key.keyId,
      tenant_id: tenantId,
      public_key: Buffer.from(key.publicKey),
      seed_sealed: deps.secrets.seal(Buffer.from(key.seed)),
      status: "active",
      statement,
      created_at: at,
    });

  /**
   * Runs `fn` in the caller's transaction when there is one: a second transaction from the pool
   * would wait for the caller's connection, which on the embedded database (one connection)
   * never comes back — the whole controller froze on the first apply.
   */
  const inTransaction = <T>(db: Db, fn: (tx: Db) => Promise<T>): Promise<T> => ("savepoint" in db ? fn(db) : (deps.sql.begin(fn) as Promise<T>));

  const service = {
    /** The pair that signs the tenant's bundles now; makes (and stores) it on first use. */
    async activeKey(db: Db, tenantId: string): Promise<SigningKeyPair> {
      if (deps.keyFile) {
        fileKey ??= loadFileKey();
        const key = await fileKey;
        // Listed to every tenant's agents; no seed is stored, the file keeps it.
        await insertSigningKey(db, {
          key_id: key.keyId,
          tenant_id: null,
          public_key: Buffer.from(key.publicKey),
          seed_sealed: null,
          status: "active",
          statement: null,
          created_at: new Date(),
        });
        return key;
      }
      const existing = await findActiveSigningKey(db, tenantId);
      if (existing) return pairOf(existing);
      return inTransaction(db, async (tx) => {
        await lockForTransaction(tx, ADVISORY_LOCKS.signing);
        const again = await findActiveSigningKey(tx, tenantId);
        if (again) return pairOf(again);
        const key = await generateSigningKey();
        await storeKey(tx, tenantId, key, null, new Date());
        return key;
      });
    },

    /** The keys the tenant's agents pin: its own (active and retired) and any deployment-wide one. */
    async list(tenantId: string) {
      await service.activeKey(deps.sql, tenantId);
      return { keys: (await listSigningKeys(deps.sql, tenantId)).map(toSigningKey) };
    },

    /** A new active key of the caller's tenant, with a statement signed by the old and the new key; the old one retires. */
    async rotate(tx: Db, ctx: RequestContext) {
      if (deps.keyFile) {
        throw new ConflictError("rotation is not available while BUNDLE_SIGNING_KEY_FILE pins one signing key for the whole deployment");
      }
      const tenantId = ctx.principal.tenantId;
      await service.activeKey(tx, tenantId);
      await lockForTransaction(tx, ADVISORY_LOCKS.signing);
      const current = (await findActiveSigningKey(tx, tenantId))!;
      const old = await pairOf(current);
      const next = await generateSigningKey();
      const statement = await signKeyStatement(next, old, ctx.now);
      await retireSigningKey(tx, current.key_id, ctx.now);
      await storeKey(tx, tenantId, next, statement as unknown as Record<string, unknown>, ctx.now);
      await deps.audit.record(tx, ctx, {
        action: "rotate",
        resource_type: "signing_key",
        resource_id: next.keyId,
        summary: `bundle signing key rotated: ${current.key_id} → ${next.keyId}`,
        severity: "warning",
        changes: { active_key_id: { from: current.key_id, to: next.keyId } },
      });
      return toSigningKey((await findSigningKey(tx, next.keyId))!);
    },

    /**
     * Carries keys written before seeds were sealed and keys were per tenant over, inside the
     * caller's transaction; running it again changes nothing. Plain seeds are sealed. The one key
     * every tenant shared introduces each existing tenant's own key with a statement signed by
     * both (the agents pinned the shared key, so they follow), then retires.
     */
    async carryOver(tx: Db, now: Date): Promise<{ sealed: number; tenants: number }> {
      await lockForTransaction(tx, ADVISORY_LOCKS.signing);
      const plain = await listPlainSeeds(tx);
      for (const row of plain) await setSealedSeed(tx, row.key_id, deps.secrets.seal(row.seed));
      const [shared] = await listSharedKeysWithSeed(tx);
      if (!shared) return { sealed: plain.length, tenants: 0 };
      const old = await pairOf(shared);
      const tenants = await listTenantsWithoutSigningKey(tx);
      for (const tenantId of tenants) {
        const next = await generateSigningKey();
        const statement = await signKeyStatement(next, old, now);
        await storeKey(tx, tenantId, next, statement as unknown as Record<string, unknown>, now);
        await deps.audit.recordSystem(tx, tenantId, now, {
          actor: "migration",
          action: "rotate",
          resource_type: "signing_key",
          resource_id: next.keyId,
          summary: `bundle signing key of the tenant introduced: ${shared.key_id} (shared by every tenant) → ${next.keyId}`,
          changes: { active_key_id: { from: shared.key_id, to: next.keyId } },
        });
      }
      await retireSigningKey(tx, shared.key_id, now);
      return { sealed: plain.length, tenants: tenants.length };
    },
  };
  return service;
}

export type SigningService = ReturnType<typeof createSigningService>;
