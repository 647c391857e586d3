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
  /**
   * How long a check of the lock may take before the leader stops running the tasks until a
   * check answers again. Default half the election interval: a leader that cannot tell whether
   * it still holds the lock stops well before a replica that took the lock over starts leading.
   */
  checkMs?: number;
  /**
   * How long a take of the lock may go unanswered before its connection is given up (closed, not
   * handed back: a lock granted on it late ends with its session) and the next election tries on
   * a new one. Default two election intervals: more than the 5 s a new connection may take to open.
   */
  takeMs?: number;
}

/** A check or take of the lock that did not answer in time. */
const LATE = Symbol("late");

/** `p`'s answer, or LATE if it takes longer than `ms` (`p` is left to settle on its own). */
function within<T>(p: Promise<T>, ms: number): Promise<T | typeof LATE> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => {
    timer = setTimeout(() => resolve(LATE), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * Leader election on the scheduler lock (a session-level advisory lock held on one reserved
 * connection, `services/operations/scheduler-lock.ts`): exactly one replica runs the periodic
 * tasks, and when it dies its connection (and so the lock) goes with it, and a follower takes
 * over at its next try. The leader checks at every election interval, and before each task run,
 * that its connection still holds the lock (a PostgreSQL restart or a killed backend drops it
 * while the process lives on), and steps down if not, so two replicas never both run the tasks.
 * A check that fails or does not answer within `checkMs` pauses the leader: it stops running
 * the tasks but keeps its connection (it may still hold the lock there), and leads again when a later check says it still
 * holds the lock, or lets the connection go as lost when a check says it does not.
 * A take that does not answer within `takeMs` (a connection gone silent) gives its connection up
 * as lost, which ends its session and any lock PostgreSQL granted there after all, and the
 * election ends: later ones try again on a new connection, so one silent connection never stops
 * the elections for good.
 * The embedded database has one process and one connection, so there the process simply leads.
 */
export function startScheduler(opts: SchedulerOptions) {
  const lock = opts.lock;
  let stopped = false;
  let leader = false;
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<void>>();
  let election: NodeJS.Timeout | null = null;
  const electionMs = opts.electionMs ?? 5000;
  const checkMs = opts.checkMs ?? electionMs / 2;
  const takeMs = opts.takeMs ?? electionMs * 2;
  /** A lock this process holds without leading: taken after the first election, or kept by a paused leader (see tryLead). */
  let taken = false;
  /** Elections still to wait, while `taken`, before checking the lock and leading. */
  let fence = 0;
  let first = true;

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

  /**
   * Stops running the tasks but keeps the lock's connection: the next election checks the lock
   * again (the `taken` path below), and leads again or lets the connection go.
   */
  const pause = (why: string, err?: unknown) => {
    if (!leader) return;
    leader = false;
    for (const t of timers.splice(0)) clearInterval(t);
    opts.logger.warn({ err }, `this process stops running the periodic tasks until it can tell it still holds the lock: ${why}`);
    taken = true;
    fence = 1;
  };

  /** Whether this process still holds the lock; steps down if not, pauses if it cannot tell in time. */
  const confirm = async (): Promise<boolean> => {
    if (!leader) return false;
    if (lock.alone) return true;
    try {
      const held = await within(lock.held(), checkMs);
      if (!leader) return false;
      if (held === true) return true;
      if (held === LATE) pause(`its check took longer than ${checkMs} ms`);
      else stepDown("the advisory lock is no longer held", new Error("the backend that took the lock no longer holds it"));
    } catch (err) {
      pause("its check failed", err);
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
        // A check that is late or fails leaves the lock taken, to be checked at the next election.
        fence = 1;
        const held = await within(lock.held(), checkMs);
        if (held === LATE || stopped || leader) return;
        taken = false;
        if (held) lead();
        else lock.letGo(true);
        return;
      }
      const fenced = !first;
      first = false;
      const got = await within(lock.take(), takeMs);
      if (got === LATE) {
        if (stopped) return;
        opts.logger.warn(
          `taking the scheduler lock took longer than ${takeMs} ms: its connection is closed (a lock granted on it late ends with it), and the next election tries on a new one`,
        );
        lock.letGo(true);
        return;
      }
      if (!got || stopped)
        taken = got; // stop() ends the session, and a lock taken while it ran with it
      else if (fenced) {
        taken = true;
        fence = 2;
      } else lead();
    } catch (err) {
      opts.logger.warn({ err }, "scheduler election failed");
    }
  };

  /** One election at a time: one that has not ended (a take within its `takeMs`) is not run beside. */
  let electing = false;
  const elect = () => {
    if (electing) return;
    electing = true;
    void tryLead().finally(() => {
      electing = false;
    });
  };
  elect();
  election = setInterval(elect, electionMs);
  election.unref();

  return {
    isLeader: () => leader,
    async stop() {
      stopped = true;
      if (election) clearInterval(election);
      for (const t of timers) clearInterval(t);
      await Promise.allSettled([...running]);
      await lock.close();
      leader = false;
    },
  };
}

export type Scheduler = ReturnType<typeof startScheduler>;
