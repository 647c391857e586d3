import type { Db } from "./connect.js";

export interface SigningKeyRow {
  key_id: string;
  /** null: deployment-wide (the key file's, or the one shared before keys were per tenant). */
  tenant_id: string | null;
  public_key: Buffer;
  /** Plain seed of a row written before seeds were sealed; the start seals and clears it. */
  seed: Buffer | null;
  /** The seed sealed with the data key; null for a key file's row and for retired keys. */
  seed_sealed: string | null;
  status: "active" | "retired";
  statement: Record<string, unknown> | null;
  created_at: Date;
  retired_at: Date | null;
}

/** The keys a tenant's agents may pin: its own and the deployment-wide ones. */
export async function listSigningKeys(db: Db, tenantId: string): Promise<SigningKeyRow[]> {
  return db<SigningKeyRow[]>`
    SELECT * FROM signing_keys WHERE tenant_id = ${tenantId} OR tenant_id IS NULL ORDER BY created_at, key_id`;
}

export async function findSigningKey(db: Db, keyId: string): Promise<SigningKeyRow | undefined> {
  const [r] = await db<SigningKeyRow[]>`SELECT * FROM signing_keys WHERE key_id = ${keyId}`;
  return r;
}

export async function findActiveSigningKey(db: Db, tenantId: string): Promise<SigningKeyRow | undefined> {
  const [r] = await db<SigningKeyRow[]>`SELECT * FROM signing_keys WHERE tenant_id = ${tenantId} AND status = 'active'`;
  return r;
}

/** Deployment-wide keys that still hold a seed: the key every tenant shared before. */
export async function listSharedKeysWithSeed(db: Db): Promise<SigningKeyRow[]> {
  return db<SigningKeyRow[]>`
    SELECT * FROM signing_keys WHERE tenant_id IS NULL AND status = 'active' AND (seed IS NOT NULL OR seed_sealed IS NOT NULL)
    ORDER BY created_at`;
}

export async function listTenantsWithoutSigningKey(db: Db): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    SELECT t.id FROM tenants t WHERE NOT EXISTS (SELECT 1 FROM signing_keys k WHERE k.tenant_id = t.id) ORDER BY t.id`;
  return rows.map((r) => r.id);
}

export async function listPlainSeeds(db: Db): Promise<{ key_id: string; seed: Buffer }[]> {
  return db<{ key_id: string; seed: Buffer }[]>`SELECT key_id, seed FROM signing_keys WHERE seed IS NOT NULL`;
}

export async function setSealedSeed(db: Db, keyId: string, sealed: string): Promise<void> {
  await db`UPDATE signing_keys SET seed_sealed = ${sealed}, seed = NULL WHERE key_id = ${keyId}`;
}

export async function insertSigningKey(db: Db, row: Omit<SigningKeyRow, "retired_at" | "seed">): Promise<void> {
  await db`
    INSERT INTO signing_keys (key_id, tenant_id, public_key, seed_sealed, status, statement, created_at)
    VALUES (${row.key_id}, ${row.tenant_id}, ${row.public_key}, ${row.seed_sealed}, ${row.status},
            ${row.statement === null ? null : db.json(row.statement as never)}, ${row.created_at})
    ON CONFLICT (key_id) DO NOTHING`;
}

/** Retired keys stay listed (agents follow statement chains through them) but lose their seed. */
export async function retireSigningKey(db: Db, keyId: string, at: Date): Promise<void> {
  await db`UPDATE signing_keys SET status = 'retired', retired_at = ${at}, seed = NULL, seed_sealed = NULL WHERE key_id = ${keyId}`;
}
