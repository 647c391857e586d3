/**
 * Whether the database can be reached, as the requests find it: the first query that fails for
 * want of a connection (refused, reset, closed, timed out, the server shutting down) marks it
 * down; from then on a probe asks every `probeMs` and the first answer marks it up again. While
 * it is down, requests are answered 503 `database_unavailable` at once and `/v1/ready` says so
 * without waiting on a connection: a client learns of an outage in milliseconds, not when its
 * own timeout ends, and nothing starts a write it could not finish.
 */

/** Node's socket errors, postgres.js's connection errors and the server's "going away" SQLSTATEs. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "CONNECT_TIMEOUT",
  "57P01", // admin_shutdown
  "57P02", // crash_shutdown
  "57P03", // cannot_connect_now (starting up, in recovery)
]);

/** True for an error that says the database could not be reached, not that a query was wrong. */
export function isConnectionError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== "string") return false;
  return CONNECTION_CODES.has(code) || code.startsWith("08"); // 08xxx: connection exception
}

export interface DatabaseHealth {
  /** True from a connection failure until a probe gets an answer. */
  isDown(): boolean;
  /** Since when it is down (null while up). */
  downSince(): Date | null;
  /** Tells the monitor what a query met; anything but a connection error is ignored. */
  noteError(err: unknown): void;
  /** Asks the database now (at most `timeoutMs`); a failure marks it down. */
  check(timeoutMs: number): Promise<boolean>;
  close(): void;
}

/**
 * The monitor. `probe` asks the database on a connection of its own (never a pool that may be
 * busy with a long refresh: a slow pool is not a lost database), every `upProbeMs` while it
 * answers and every `downProbeMs` while it does not.
 */
export function createDatabaseHealth(o: {
  probe: () => Promise<void>;
  /**
   * False for the embedded database: it lives in this process, so "unreachable" cannot happen,
   * and its one connection is busy for as long as a long write runs (a probe would wait on it
   * and call that an outage). Then nothing is probed on a timer and nothing is ever down.
   */
  monitor?: boolean;
  upProbeMs?: number;
  downProbeMs?: number;
  onChange?: (down: boolean, err?: unknown) => void;
}): DatabaseHealth {
  if (o.monitor === false) {
    return {
      isDown: () => false,
      downSince: () => null,
      noteError: () => {},
      check: (timeoutMs) =>
        withTimeout(o.probe(), timeoutMs).then(
          () => true,
          () => false,
        ),
      close: () => {},
    };
  }
  const upProbeMs = o.upProbeMs ?? 2000;
  const downProbeMs = o.downProbeMs ?? 1000;
  let since: Date | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  /** Probes in a row that got no answer in time: one slow answer is not an outage, two are. */
  let slow = 0;

  const markDown = (err: unknown) => {
    if (since !== null || closed) return;
    since = new Date();
    o.onChange?.(true, err);
    schedule();
  };
  const markUp = () => {
    if (since === null) return;
    since = null;
    o.onChange?.(false);
    schedule();
  };
  const schedule = () => {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(tick, since === null ? upProbeMs : downProbeMs);
    timer.unref();
  };
  const check = async (timeoutMs: number) => {
    try {
      await withTimeout(o.probe(), timeoutMs);
      slow = 0;
      markUp();
      return true;
    } catch (err) {
      if (isConnectionError(err) || ++slow >= 2) markDown(err);
      return false;
    }
  };
  const tick = async () => {
    timer = null;
    await check(Math.max(downProbeMs, 1000));
    schedule();
  };
  schedule();

  return {
    isDown: () => since !== null,
    downSince: () => since,
    noteError(err) {
      if (isConnectionError(err)) markDown(err);
    },
    check,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
    },
  };
}

/** `work`, or a rejection with `code` (default TIMEOUT, not a connection error: slow is not gone) after `ms`. */
export function withTimeout<T>(work: Promise<T>, ms: number, code = "TIMEOUT"): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code })), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}
