import { ADVISORY_LOCKS, type Backend, backendHoldsLock, backendOf, endBackend, tryLockForSession } from "../../db/advisory-locks.js";
import { type Database, reserveSession, type Sql } from "../../db/connect.js";

/** Advisory lock held by the one scheduler leader among all replicas. */
export const SCHEDULER_LOCK = ADVISORY_LOCKS.scheduler;

/** How long closing waits for PostgreSQL to end a session that a hung take left behind. */
const CLOSE_WAIT_MS = 1000;

/** The lock's session: a client of its own, its one connection reserved, and that connection's backend. */
interface Session {
  client: Sql;
  conn: Awaited<ReturnType<Sql["reserve"]>> | null;
  backend: Backend | null;
  /** A take was sent on it and has not answered: PostgreSQL may have granted the lock there unseen. */
  taking: boolean;
}

/**
 * The scheduler's leadership as the database keeps it: a session-level advisory lock held on a
 * connection of its own, so that when the leader dies its connection, and so the lock, goes with
 * it. The connection is the one connection of a client of its own (`Database.session`), never
 * one of the pool's: giving it up ends the client, and so the session and any lock on it, where
 * a connection given back to the pool could go on holding a lock granted after the process
 * stopped waiting for it, with no one knowing. It is reserved on that client, so postgres.js
 * never reopens it on a new backend unseen: once lost, queries on it fail and the next try opens
 * a new client. The embedded database has one process and one connection: there the process is
 * `alone` and simply leads. The scheduler (`scheduler/scheduler.ts`) decides when to try, check
 * and let go.
 */
export function createSchedulerLock(db: Database) {
  let session: Session | null = null;
  /** The backend that took the lock, while this process holds it. */
  let holder: number | null = null;
  /**
   * Backends of sessions let go as lost after a take was sent on them, still to be ended
   * through the pool: a connection that went silent takes its close with it, and PostgreSQL
   * would keep the session (and a lock granted late) until it noticed by itself.
   */
  const orphans: Backend[] = [];
  let ending: Promise<void> | null = null;

  /** Ends the orphaned backends through the pool; one round at a time, retried at each take until PostgreSQL answers. */
  const endOrphans = (): Promise<void> => {
    if (ending || orphans.length === 0) return ending ?? Promise.resolve();
    ending = (async () => {
      for (const b of [...orphans]) {
        await endBackend(db.sql, b);
        orphans.splice(orphans.indexOf(b), 1);
      }
    })()
      .catch(() => {})
      .finally(() => {
        ending = null;
      });
    return ending;
  };

  /**
   * Ends the session's client at once (`end({ timeout: 0 })`: what is in flight on it fails,
   * postgres.js sends its Terminate and closes its side of the socket), and PostgreSQL ends the
   * session with every lock on it when that reaches it.
   * A `lost` session whose take has not answered may not carry that close to the server (a
   * connection gone silent), so its backend is ended through the pool as well.
   */
  const drop = (lost: boolean): Promise<void> => {
    const s = session;
    session = null;
    holder = null;
    if (!s) return Promise.resolve();
    if (lost && s.taking && s.backend) {
      orphans.push(s.backend);
      void endOrphans();
    }
    return s.client.end({ timeout: 0 }).catch(() => {});
  };

  return {
    alone: db.kind === "embedded",

    /**
     * Takes the lock if it is free: true when this process now holds it. A database that does
     * not answer throws, and the session is let go as lost for the next try to open afresh.
     */
    async take(): Promise<boolean> {
      void endOrphans();
      const s: Session = (session ??= { client: db.session("scheduler lock"), conn: null, backend: null, taking: false });
      try {
        s.conn ??= await reserveSession(s.client);
        // Its backend is learnt before any take is sent on it, so that a take that never
        // answers still leaves a backend to end.
        s.backend ??= (await backendOf(s.conn)) ?? null;
        if (!s.backend) throw new Error("the scheduler lock's connection does not show in pg_stat_activity");
        if (session !== s) return false;
        s.taking = true;
        const row = await tryLockForSession(s.conn, SCHEDULER_LOCK);
        s.taking = false;
        // Let go while the take ran (it did not answer in time): what it took went with it.
        if (session !== s || !row?.ok) return false;
        holder = row.pid;
        return true;
      } catch (err) {
        if (session === s) void drop(true);
        throw err;
      }
    },

    /**
     * Whether the backend that took the lock still holds it (a connection killed by a restart or
     * pg_terminate_backend takes the lock with it).
     * Asked through the pool: a query on the lock's connection itself, once its backend is
     * gone, may never settle.
     */
    async held(): Promise<boolean> {
      if (!session || holder === null) return false;
      return backendHoldsLock(db.sql, holder, SCHEDULER_LOCK);
    },

    /**
     * Lets the lock go: after stepping down, or when a take did not answer in time. The session
     * ends (and the lock with it); a `lost` one is not written to again, and its backend is
     * ended through the pool too if a take sent on it has not answered.
     */
    letGo(lost: boolean): void {
      void drop(lost);
    },

    /**
     * At shutdown: ends the session, which unlocks the lock if this process holds it. A take
     * still running may have been granted the lock unseen: its session is let go as lost, and
     * closing waits a moment for PostgreSQL to end it.
     */
    async close(): Promise<void> {
      await drop(session?.taking === true);
      if (orphans.length) await Promise.race([endOrphans(), new Promise((r) => setTimeout(r, CLOSE_WAIT_MS).unref())]);
    },
  };
}

export type SchedulerLock = ReturnType<typeof createSchedulerLock>;
