import type { Db } from "./connect.js";

/** The id of the data key that sealed this database's secrets; null before the first controller recorded one. */
export async function findDataKeyId(db: Db): Promise<string | null> {
  const [row] = await db<{ key_id: string }[]>`SELECT key_id FROM data_key`;
  return row?.key_id ?? null;
}

/** Records `keyId` unless one is recorded already; answers the recorded id (the winner of a race). */
export async function recordDataKeyId(db: Db, keyId: string): Promise<string> {
  await db`INSERT INTO data_key (key_id) VALUES (${keyId}) ON CONFLICT (singleton) DO NOTHING`;
  return (await findDataKeyId(db))!;
}

/** One sealed signing-key seed, to prove a key opens what this database holds; null when none is sealed. */
export async function findAnySealedSeed(db: Db): Promise<string | null> {
  const [row] = await db<{ seed_sealed: string }[]>`SELECT seed_sealed FROM signing_keys WHERE seed_sealed IS NOT NULL LIMIT 1`;
  return row?.seed_sealed ?? null;
}
