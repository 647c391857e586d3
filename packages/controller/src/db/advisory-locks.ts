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

/** A backend, told apart from a later one that reuses its pid by when it started. */
export interface Backend {
  pid: number;
  started: string;
}

/** The backend of the connection `conn`. */
export async function backendOf(conn: Db): Promise<Backend | undefined> {
  const [row] = await conn<Backend[]>`
    SELECT pid, backend_start::text AS started FROM pg_stat_activity WHERE pid = pg_backend_pid()`;
  return row;
}

/**
 * Ends the backend `b` if it still runs, and so its session and every session lock on it
 * (asked through another connection: the same role may end its own backends).
 */
export async function endBackend(sql: Sql, b: Backend): Promise<void> {
  await sql`
    SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ${b.pid} AND backend_start::text = ${b.started}`;
}
