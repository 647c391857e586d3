import type { Clock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import type { SchedulerLock } from "../services/operations/scheduler-lock.js";

export { SCHEDULER_LOCK } from "../services/operations/scheduler-lock.js";

export interface PeriodicTask {
  name: string;
  /** How often the leader runs it. */
  everyMs: number;
  run(now: Date): Promise<void>;
}

export interface SchedulerOptions {
  /** The leadership (`createSchedulerLock`): one process among the replicas runs the tasks. */
  lock: SchedulerLock;
  clock: Clock;
  logger: FastifyBaseLogger;
  tasks: PeriodicTask[];
  /** How often a follower tries to become the leader. Default 5 s (hand-over well within a minute). */
  electionMs?: number;
}

/**
 * Leader election on the scheduler lock (a session-level advisory lock held on one reserved
 * connection, `services/operations/scheduler-lock.ts`): exactly one replica runs the periodic
 * tasks, and when it dies its connection (and so the lock) goes with it, and a follower takes
 * over at its next try. The leader checks at every election interval, and before each task run,
 * that its connection still holds the lock (a PostgreSQL restart or a killed backend drops it
 * while the process lives on), and steps down if not, so two replicas never both run the tasks.
 * The embedded database has one process and one connection, so there the process simply leads.
 */
export function startScheduler(opts: SchedulerOptions) {
  const lock = opts.lock;
  let stopped = false;
  let leader = false;
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
    lock.letGo(err !== undefined);
  };

  /** Whether this process still holds the lock; steps down if not. */
  const confirm = async (): Promise<boolean> => {
    if (!leader) return false;
    if (lock.alone) return true;
    try {
      if (await lock.held()) return true;
      stepDown("the advisory lock is no longer held", new Error("the backend that took the lock no longer holds it"));
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

  /**
   * A lock taken after the first election makes this process the leader only at its second
   * election after that, if it still holds the lock then: a leader whose connection was killed
   * learns it at its own next election, which comes within one interval of the kill (both elect
   * at the same interval, at phases of their own), and its check of the lock takes a query's
   * time. With one interval of waiting, a leader whose election fell just before the other's
   * take-over and whose check was slower (a loaded machine) still led for a moment beside the
   * new one; a whole interval more covers that. At start there is no leader to wait for, and the
   * process leads at once.
   */
  let taken = false;
  /** Elections still to wait, once a lock was taken after the first, before leading. */
  let fence = 0;
  let first = true;
  const tryLead = async () => {
    if (stopped) return;
    if (leader) {
      await confirm();
      return;
    }
    if (lock.alone) return lead();
    try {
      if (taken) {
        if (--fence > 0) return;
        taken = false;
        if ((await lock.held()) && !stopped) lead();
        else lock.letGo(true);
        return;
      }
      const fenced = !first;
      first = false;
      const got = await lock.take();
      if (!got || stopped)
        taken = got; // stop() unlocks a lock taken while it ran
      else if (fenced) {
        taken = true;
        fence = 2;
      } else lead();
    } catch (err) {
      taken = false;
      opts.logger.warn({ err }, "scheduler election failed");
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
      await lock.close(leader || taken);
      leader = false;
    },
  };
}

export type Scheduler = ReturnType<typeof startScheduler>;
