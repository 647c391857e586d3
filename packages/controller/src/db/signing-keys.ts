import type { Db } from "./connect.js";

export interface SigningKeyRow {
  key_id: string;
  public_key: Buffer;
  seed: Buffer | null;
  status: "active" | "retired";
  statement: Record<string, unknown> | null;
  created_at: Date;
  retired_at: Date | null;
}

export async function listSigningKeys(db: Db): Promise<SigningKeyRow[]> {
  return db<SigningKeyRow[]>`SELECT * FROM signing_keys ORDER BY created_at, key_id`;
}

export async function findActiveSigningKey(db: Db): Promise<SigningKeyRow | undefined> {
  const [r] = await db<SigningKeyRow[]>`SELECT * FROM signing_keys WHERE status = 'active'`;
  return r;
}

export async function insertSigningKey(db: Db, row: Omit<SigningKeyRow, "retired_at">): Promise<void> {
  await db`
    INSERT INTO signing_keys (key_id, public_key, seed, status, statement, created_at)
    VALUES (${row.key_id}, ${row.public_key}, ${row.seed}, ${row.status}, ${row.statement === null ? null : db.json(row.statement as never)}, ${row.created_at})
    ON CONFLICT (key_id) DO NOTHING`;
}

export async function retireSigningKey(db: Db, keyId: string, at: Date): Promise<void> {
  await db`UPDATE signing_keys SET status = 'retired', retired_at = ${at}, seed = NULL WHERE key_id = ${keyId}`;
}
