import { ADVISORY_LOCKS, backendHoldsLock, tryLockForSession, unlockAllSession, unlockSession } from "../../db/advisory-locks.js";
import type { Database } from "../../db/connect.js";

/** Advisory lock held by the one scheduler leader among all replicas. */
export const SCHEDULER_LOCK = ADVISORY_LOCKS.scheduler;

/**
 * The scheduler's leadership as the database keeps it: a session-level advisory lock held on one
 * reserved connection, so that when the leader dies its connection, and so the lock, goes with
 * it. The embedded database has one process and one connection: there the process is `alone`
 * and simply leads. The scheduler (`scheduler/scheduler.ts`) decides when to try, check and let go.
 */
export function createSchedulerLock(db: Database) {
  let reserved: Awaited<ReturnType<Database["sql"]["reserve"]>> | null = null;
  /** The backend that took the lock, while this process holds it. */
  let holder: number | null = null;
  return {
    alone: db.kind === "embedded",

    /**
     * Takes the lock if it is free: true when this process now holds it. A database that does
     * not answer throws, and the connection is given back for the next try to reserve afresh.
     */
    async take(): Promise<boolean> {
      try {
        reserved ??= await db.sql.reserve();
        const row = await tryLockForSession(reserved, SCHEDULER_LOCK);
        if (!row?.ok) return false;
        holder = row.pid;
        return true;
      } catch (err) {
        reserved?.release();
        reserved = null;
        throw err;
      }
    },

    /**
     * Whether the backend that took the lock still holds it (a connection killed by a restart or
     * pg_terminate_backend takes the lock with it, and a reconnect is a new backend without it).
     * Asked through the pool: a query on the reserved connection itself, once its backend is
     * gone, may never settle (postgres.js then throws from a timer instead of rejecting).
     */
    async held(): Promise<boolean> {
      if (!reserved || holder === null) return false;
      return backendHoldsLock(db.sql, holder, SCHEDULER_LOCK);
    },

    /**
     * Lets the lock go after stepping down. A connection that still answers unlocks it; a lost
     * one (`lost`) has already and must not be written to again: postgres.js then throws from a
     * timer, outside any promise, which ended the whole process.
     */
    letGo(lost: boolean): void {
      const r = reserved;
      reserved = null;
      holder = null;
      if (r && !lost)
        void unlockAllSession(r)
          .catch(() => {})
          .finally(() => r.release());
      else r?.release();
    },

    /** At shutdown: unlocks the lock if this process leads, and gives the connection back. */
    async close(leading: boolean): Promise<void> {
      const r = reserved;
      reserved = null;
      holder = null;
      if (!r) return;
      if (leading) await unlockSession(r, SCHEDULER_LOCK).catch(() => {});
      r.release();
    },
  };
}

export type SchedulerLock = ReturnType<typeof createSchedulerLock>;
