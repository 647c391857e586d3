import { setTimeout as delay } from "node:timers/promises";

/** Time as the agent sees it; tests pass their own (bird_exporter's overrideNowFunc habit). */
export interface Clock {
  now(): number;
  /** Resolves after `ms`, or at once (never rejecting) when `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export function createSystemClock(): Clock {
  return {
    now: () => Date.now(),
    sleep: (ms, signal) => delay(ms, undefined, { signal }).catch(() => undefined),
  };
}

export interface BackoffOptions {
  baseMs: number;
  maxMs: number;
}

/**
 * "Full jitter" exponential backoff (AWS architecture blog, 2015): a uniform delay in
 * [base/2, min(max, base·2^attempt)], so a controller restart is not met by every agent
 * reconnecting in the same second. `random` is injected for tests.
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(attempt, 30));
  const floor = Math.min(ceiling, options.baseMs / 2);
  return Math.round(floor + random() * (ceiling - floor));
}

/** `ms` ± `fraction`, for periodic work that many agents do on the same schedule. */
export function jittered(ms: number, fraction: number, random: () => number = Math.random): number {
  return Math.max(1, Math.round(ms * (1 - fraction + 2 * fraction * random())));
}

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
      wait = ok
        ? jittered(o.intervalMs, 0.2, random)
        : backoffDelay(failures, { baseMs: o.intervalMs, maxMs: o.maxBackoffMs ?? o.intervalMs * 10 }, random);
    }
  })();
  return {
    stop: async () => {
      abort.abort();
      await done;
    },
  };
}
