import type { Clock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import { ADVISORY_LOCKS, backendHoldsLock, tryLockForSession, unlockAllSession, unlockSession } from "../db/advisory-locks.js";
import type { Database } from "../db/connect.js";

/** Advisory lock held by the one scheduler leader among all replicas. */
export const SCHEDULER_LOCK = ADVISORY_LOCKS.scheduler;

export interface PeriodicTask {
  name: string;
  /** How often the leader runs it. */
  everyMs: number;
  run(now: Date): Promise<void>;
}

export interface SchedulerOptions {
  db: Database;
  clock: Clock;
  logger: FastifyBaseLogger;
  tasks: PeriodicTask[];
  /** How often a follower tries to become the leader. Default 5 s (hand-over well within a minute). */
  electionMs?: number;
}

/**
 * Leader election on a session-level advisory lock held on one reserved connection: exactly
 * one replica runs the periodic tasks, and when it dies its connection (and so the lock) goes
 * with it, and a follower takes over at its next try. The leader checks at every election
 * interval, and before each task run, that its connection still holds the lock (a PostgreSQL
 * restart or a killed backend drops it while the process lives on), and steps down if not, so
 * two replicas never both run the tasks. The embedded database has one process and one
 * connection, so there the process simply leads.
 */
export function startScheduler(opts: SchedulerOptions) {
  let stopped = false;
  let leader = false;
  let reserved: Awaited<ReturnType<Database["sql"]["reserve"]>> | null = null;
  /** The backend that holds the lock for this process, while it leads. */
  let lockPid: number | null = null;
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<void>>();
  let election: NodeJS.Timeout | null = null;

  const runTask = (task: PeriodicTask) => {
    if (stopped || !leader) return;
    const p = (async () => {
      // The lock is checked right before each run: a leader whose connection (and so lock) was
      // lost never runs a task beside the replica that took the lock over.
      if (!(await confirm())) return;
      await task.run(new Date(opts.clock.now()));
    })()
      .catch((err) => opts.logger.error({ err, task: task.name }, "periodic task failed"))
      .finally(() => running.delete(p));
    running.add(p);
  };

  /** Stops running the tasks; the next election may make this process the leader again. */
  const stepDown = (why: string, err?: unknown) => {
    if (!leader) return;
    leader = false;
    for (const t of timers.splice(0)) clearInterval(t);
    opts.logger.warn({ err }, `this process no longer runs the periodic tasks: ${why}`);
    const r = reserved;
    reserved = null;
    lockPid = null;
    // A connection that still holds the lock must let it go; a dead one has already, and must
    // not be written to again: postgres.js then throws from a timer, outside any promise, and
    // that uncaught error ended the whole process (seen in the test that kills the backend).
    if (r && err === undefined)
      void unlockAllSession(r)
        .catch(() => {})
        .finally(() => r.release());
    else r?.release();
  };

  /**
   * Whether this process still holds the lock: its reserved connection answers and its backend
   * is the lock's holder (a connection killed by a restart or pg_terminate_backend takes the
   * lock with it, and a reconnect is a new backend without it). Steps down otherwise.
   */
  const confirm = async (): Promise<boolean> => {
    if (!leader) return false;
    if (opts.db.kind === "embedded") return true;
    if (!reserved || lockPid === null) return false;
    try {
      // Asked through the pool, about the backend that took the lock: a query on the reserved
      // connection itself, once its backend is gone, may never settle (postgres.js then throws
      // from a timer instead of rejecting), which held every task and the shutdown for ever.
      if (await backendHoldsLock(opts.db.sql, lockPid, SCHEDULER_LOCK)) return true;
      stepDown("the advisory lock is no longer held", new Error(`backend ${lockPid} no longer holds the lock`));
    } catch (err) {
      opts.logger.warn({ err }, "could not check the scheduler lock; trying again at the next election");
    }
    return false;
  };

  const lead = () => {
    leader = true;
    opts.logger.info("this process now runs the periodic tasks");
    for (const task of opts.tasks) {
      runTask(task);
      const timer = setInterval(() => runTask(task), task.everyMs);
      timer.unref();
      timers.push(timer);
    }
  };

  const tryLead = async () => {
    if (stopped) return;
    if (leader) {
      await confirm();
      return;
    }
    if (opts.db.kind === "embedded") return lead();
    try {
      reserved ??= await opts.db.sql.reserve();
      const row = await tryLockForSession(reserved, SCHEDULER_LOCK);
      if (row?.ok && !stopped) {
        lockPid = row.pid;
        lead();
      }
    } catch (err) {
      opts.logger.warn({ err }, "scheduler election failed");
      reserved?.release();
      reserved = null;
    }
  };

  void tryLead();
  election = setInterval(() => void tryLead(), opts.electionMs ?? 5000);
  election.unref();

  return {
    isLeader: () => leader,
    async stop() {
      stopped = true;
      if (election) clearInterval(election);
      for (const t of timers) clearInterval(t);
      await Promise.allSettled([...running]);
      if (reserved) {
        if (leader) await unlockSession(reserved, SCHEDULER_LOCK).catch(() => {});
        reserved.release();
      }
      leader = false;
    },
  };
}

export type Scheduler = ReturnType<typeof startScheduler>;
