import type { FastifyBaseLogger } from "fastify";
import type { Database } from "../db/connect.js";
import type { Clock } from "../lib/time.js";

/** Advisory lock held by the one scheduler leader among all replicas. */
export const SCHEDULER_LOCK = 7_240_002;

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
 * with it, and a follower takes over at its next try. The embedded database has one process
 * and one connection, so there the process simply leads.
 */
export function startScheduler(opts: SchedulerOptions) {
  let stopped = false;
  let leader = false;
  let reserved: Awaited<ReturnType<Database["sql"]["reserve"]>> | null = null;
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<void>>();
  let election: NodeJS.Timeout | null = null;

  const runTask = (task: PeriodicTask) => {
    if (stopped || !leader) return;
    const p = task
      .run(opts.clock())
      .catch((err) => opts.logger.error({ err, task: task.name }, "periodic task failed"))
      .finally(() => running.delete(p));
    running.add(p);
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
    if (stopped || leader) return;
    if (opts.db.kind === "embedded") return lead();
    try {
      reserved ??= await opts.db.sql.reserve();
      const [row] = await reserved<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${SCHEDULER_LOCK}) AS ok`;
      if (row?.ok) lead();
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
        if (leader) await reserved`SELECT pg_advisory_unlock(${SCHEDULER_LOCK})`.catch(() => {});
        reserved.release();
      }
      leader = false;
    },
  };
}

export type Scheduler = ReturnType<typeof startScheduler>;
