import { backoffDelay, type Clock, jittered } from "@rlc/shared/time";

export interface PeriodicOptions {
  intervalMs: number;
  clock: Clock;
  /** After a failure the next run waits longer, up to this. Default 10 × interval. */
  maxBackoffMs?: number;
  /** Wait before the first run. Default: one (jittered) interval. */
  firstDelayMs?: number;
  random?: () => number;
}

/**
 * Runs `task` every `intervalMs` ± 20 %; after a failure (false or a throw) with backoff instead.
 * One run at a time: the next wait starts when a run ends.
 */
export function startPeriodic(task: () => Promise<boolean>, o: PeriodicOptions): { stop(): Promise<void> } {
  const abort = new AbortController();
  const random = o.random ?? Math.random;
  const done = (async () => {
    let failures = 0;
    let wait = o.firstDelayMs ?? jittered(o.intervalMs, 0.2, random);
    while (!abort.signal.aborted) {
      await o.clock.sleep(wait, abort.signal);
      if (abort.signal.aborted) break;
      const ok = await task().catch(() => false);
      failures = ok ? 0 : failures + 1;
      wait = ok ? jittered(o.intervalMs, 0.2, random) : backoffDelay(failures, { baseMs: o.intervalMs, maxMs: o.maxBackoffMs ?? o.intervalMs * 10 }, random);
    }
  })();
  return {
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}
