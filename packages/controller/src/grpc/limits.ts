/**
 * In-process limits of the agents' gRPC service. They are per replica on purpose: each one
 * protects this process's memory and event loop, which is what a flood from one key exhausts.
 */

/** The limits, with the defaults a fleet of well-behaved agents never reaches. */
export interface GrpcLimits {
  /** Watch streams open at once per node key. An agent holds one; reconnects overlap briefly. */
  watchesPerKey: number;
  /** GetBundle streams in flight at once per node key. An agent fetches one bundle at a time. */
  bundlesPerKey: number;
  /**
   * GetBundle streams served at once on this replica, all keys together. Past it, streams wait
   * in line (first come, first served) for a free place: an apply wakes every agent at once, and
   * refusing them would send each one to its retry backoff instead of a short wait.
   */
  bundlesTotal: number;
  /** GetBundle streams waiting in that line at most; past it, a stream is refused (RESOURCE_EXHAUSTED). */
  bundlesWaiting: number;
  /** Watch opens per key: a bucket of `burst`, refilled at one every `everyMs`. */
  watchOpens: { burst: number; everyMs: number };
  /** Failed authentications per key prefix and per peer address before calls are refused unread. */
  authFailures: { burst: number; everyMs: number };
  /** A unary call that has not answered by then answers DEADLINE_EXCEEDED. */
  unaryDeadlineMs: number;
  /** A GetBundle stream whose reader took no data for this long is cancelled. */
  bundleIdleMs: number;
  /** GetBundle chunk size; memory held per stream is about one chunk. */
  chunkBytes: number;
}

export const DEFAULT_GRPC_LIMITS: GrpcLimits = {
  watchesPerKey: 4,
  bundlesPerKey: 2,
  bundlesTotal: 64,
  bundlesWaiting: 4096,
  watchOpens: { burst: 10, everyMs: 6_000 },
  authFailures: { burst: 20, everyMs: 3_000 },
  unaryDeadlineMs: 15_000,
  bundleIdleMs: 30_000,
  chunkBytes: 256 * 1024,
};

/** Counts what each key holds open; `acquire` answers a release function, or null when full. */
export function createCounter(cap: number) {
  const held = new Map<string, number>();
  return {
    acquire(key: string): (() => void) | null {
      const n = held.get(key) ?? 0;
      if (n >= cap) return null;
      held.set(key, n + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const left = (held.get(key) ?? 1) - 1;
        if (left <= 0) held.delete(key);
        else held.set(key, left);
      };
    },
    total(): number {
      let sum = 0;
      for (const n of held.values()) sum += n;
      return sum;
    },
  };
}

/**
 * `cap` places with a line of at most `maxWaiting` behind them. `acquire` answers a release
 * function once a place is free (a release hands the place to the first in line), or null: at
 * once when the line is full, or when `gone` settles while still in line (the caller left).
 */
export function createSlots(cap: number, maxWaiting: number) {
  let held = 0;
  // A Set keeps insertion order: the first in line is the first value.
  const line = new Set<(release: () => void) => void>();
  const releaser = () => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = line.values().next();
      if (next.done) held--;
      else {
        line.delete(next.value);
        next.value(releaser());
      }
    };
  };
  return {
    acquire(gone: Promise<unknown>): Promise<(() => void) | null> {
      if (held < cap) {
        held++;
        return Promise.resolve(releaser());
      }
      if (line.size >= maxWaiting) return Promise.resolve(null);
      return new Promise((resolve) => {
        const take = (release: () => void) => resolve(release);
        line.add(take);
        void gone.then(() => {
          if (line.delete(take)) resolve(null);
        });
      });
    },
    /** Places taken now. */
    held: () => held,
    /** Callers in line now. */
    waiting: () => line.size,
  };
}

export { createBuckets } from "../lib/token-buckets.js";

export class DeadlineError extends Error {
  override name = "DeadlineError";
}

/** `work`, or a DeadlineError after `ms`; the work is not stopped, only no longer waited for. */
export function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
