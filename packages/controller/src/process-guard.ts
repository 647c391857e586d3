/**
 * The last-resort rule for errors that escape every promise. Most mean the process's state is
 * unknown, and it closes (as it always did). One kind does not: postgres.js throws from a timer
 * when a connection's socket closed under a deferred write (a failover, a proxy restart,
 * pg_terminate_backend). The queries on that connection have already failed or been retried,
 * the pool opens new connections, and nothing of the controller's state lives in the dead one —
 * so that error is logged and counted, and the process keeps serving.
 */

const POSTGRES_DRIVER = /[\\/]node_modules[\\/]postgres[\\/](?:cjs[\\/])?src[\\/]/;

/** True for an error thrown by postgres.js's own code (its stack's top frame is in the driver). */
export function isPostgresDriverError(err: unknown): boolean {
  if (!(err instanceof Error) || typeof err.stack !== "string") return false;
  const firstFrame = err.stack.split("\n").find((line) => line.trimStart().startsWith("at "));
  return firstFrame !== undefined && POSTGRES_DRIVER.test(firstFrame);
}

export interface UncaughtRule {
  /** Whether the database is PostgreSQL over the network (the embedded one lives in this process: its errors are not survivable). */
  survivable: (err: unknown) => boolean;
  /** Told about a survived error (log and count it). */
  onSurvived: (err: unknown) => void;
  /** Told about any other: the process closes. */
  onFatal: (err: unknown) => void;
}

/** Installs the rule on `process` for uncaught exceptions; answers its removal. */
export function installUncaughtRule(rule: UncaughtRule, target: NodeJS.Process = process): () => void {
  const handler = (err: unknown) => (rule.survivable(err) ? rule.onSurvived(err) : rule.onFatal(err));
  target.on("uncaughtException", handler);
  return () => target.removeListener("uncaughtException", handler);
}
