import type { Db, Sql } from "./connect.js";

/**
 * PostgreSQL advisory locks the controller takes, by key. Transaction locks serialize a
 * one-time step across replicas; the session lock elects the one scheduler leader.
 */
export const ADVISORY_LOCKS = {
  migration: 7_240_001,
  scheduler: 7_240_002,
  signing: 7_240_003,
  sealSecrets: 7_240_009,
} as const;

/** Waits for the lock and holds it until `tx` ends. */
export async function lockForTransaction(tx: Db, key: number): Promise<void> {
  await tx`SELECT pg_advisory_xact_lock(${key})`;
}

/** Takes a session lock on a reserved connection if it is free; answers the connection's backend pid too. */
export async function tryLockForSession(conn: Db, key: number): Promise<{ ok: boolean; pid: number } | undefined> {
  const [row] = await conn<{ ok: boolean; pid: number }[]>`SELECT pg_try_advisory_lock(${key}) AS ok, pg_backend_pid() AS pid`;
  return row;
}

/** Whether the backend `pid` still holds the session lock `key` (asked through any connection). */
export async function backendHoldsLock(sql: Sql, pid: number, key: number): Promise<boolean> {
  const [row] = await sql<{ held: boolean }[]>`
    SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = ${pid}
                     AND classid = 0 AND objid = ${key} AND objsubid = 1) AS held`;
  return row?.held === true;
}

export async function unlockSession(conn: Db, key: number): Promise<void> {
  await conn`SELECT pg_advisory_unlock(${key})`;
}

export async function unlockAllSession(conn: Db): Promise<void> {
  await conn`SELECT pg_advisory_unlock_all()`;
}
