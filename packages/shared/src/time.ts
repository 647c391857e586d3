import { setTimeout as delay } from "node:timers/promises";

/**
 * Time as the agent and the BIRD sequence see it; tests pass their own (bird_exporter's
 * overrideNowFunc habit).
 */
export interface Clock {
  /** Milliseconds since the epoch. */
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
 * reconnecting in the same second, nor a portal coming back by every replica's retry at once.
 * `random` is injected for tests.
 */
export function backoffDelay(attempt: number, options: BackoffOptions, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxMs, options.baseMs * 2 ** Math.min(attempt, 30));
  const floor = Math.min(ceiling, options.baseMs / 2);
  return Math.round(floor + random() * (ceiling - floor));
}

/** `ms` ± `fraction`, for periodic work that many processes do on the same schedule. */
export function jittered(ms: number, fraction: number, random: () => number = Math.random): number {
  return Math.max(1, Math.round(ms * (1 - fraction + 2 * fraction * random())));
}
