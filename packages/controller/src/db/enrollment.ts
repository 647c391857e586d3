import type { Db } from "./connect.js";

/**
 * Stores a speaker's new token and expires its older unused ones in the same statement batch:
 * only the newest token issued can enrol, so a token shown in an old ticket or chat log is dead
 * as soon as a new one is asked for. Call inside the issuing transaction.
 */
export async function insertEnrollmentToken(
  db: Db,
  row: { id: string; tenant_id: string; speaker_id: string; token_hash: Buffer; expires_at: Date; created_at: Date },
): Promise<void> {
  await db`
    UPDATE enrollment_tokens SET expires_at = ${row.created_at}
    WHERE speaker_id = ${row.speaker_id} AND used_at IS NULL AND expires_at > ${row.created_at}`;
  await db`
    INSERT INTO enrollment_tokens (id, tenant_id, speaker_id, token_hash, expires_at, created_at)
    VALUES (${row.id}, ${row.tenant_id}, ${row.speaker_id}, ${row.token_hash}, ${row.expires_at}, ${row.created_at})`;
}

/** Spends a token (single use): answers its speaker, or nothing when unknown, used or expired. */
export async function spendEnrollmentToken(db: Db, hash: Buffer, now: Date): Promise<{ tenant_id: string; speaker_id: string } | undefined> {
  const [row] = await db<{ tenant_id: string; speaker_id: string }[]>`
    UPDATE enrollment_tokens SET used_at = ${now}
    WHERE token_hash = ${hash} AND used_at IS NULL AND expires_at > ${now}
    RETURNING tenant_id, speaker_id`;
  return row;
}
