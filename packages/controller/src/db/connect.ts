import { AsyncLocalStorage } from "node:async_hooks";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";
import { releaseQueryOrigin, runTransactionTexts } from "./query-origin.js";

export type Sql = postgres.Sql;
/** A connection or a transaction: every query function takes one of these. */
export type Db = postgres.Sql | postgres.TransactionSql;
/** A transaction: for a function whose statements are sent without waiting, relying on one connection running them in order. */
export type Tx = postgres.TransactionSql;

/**
 * Runs `fn` in a savepoint of the transaction `db` (a failure rolls back what `fn` did, and
 * only that), or in a transaction of its own when `db` is the pool.
 */
export function withSavepoint<T>(db: Db, fn: (sp: Db) => Promise<T>): Promise<T> {
  return ("savepoint" in db ? db.savepoint((sp) => fn(sp)) : db.begin((tx) => fn(tx))) as Promise<T>;
}

/** Thrown when code inside a transaction queries the pool instead of the transaction. */
export class PoolInTransactionError extends Error {
  override name = "PoolInTransactionError";
  constructor(what: string) {
    super(`${what} on the pool inside a transaction: pass the transaction (tx) down instead`);
  }
}

/** The scope of one transaction's callback: open until that transaction's `begin` has settled. */
interface TransactionScope {
  open: boolean;
}

const inTransaction = new AsyncLocalStorage<TransactionScope>();

/**
 * Transactions whose callback has begun and whose `begin` has not yet settled, over every
 * guarded pool. While there is none the storage is disabled: an enabled AsyncLocalStorage (on
 * Node 20) turns on async_hooks for the whole process, and every promise, nextTick, timer and
 * socket write then calls its init hook in JS, on every request of every route, long after the
 * last transaction ended: 4–33 µs of server CPU a request in three runs, the bare route's and the lookup's
 * alike, in bench/lookup-builds.mjs on a loaded 2-core machine (docs/benchmarks.md). Node 24's
 * storage (AsyncContextFrame) has no hooks to turn off; disabling it there is harmless.
 * A callback left over from a transaction that has ended (a timer it set) still carries that
 * transaction's scope, closed by then, and may query the pool: it holds no connection, so it
 * cannot deadlock. This holds on every Node, whether the storage is on or off at that moment.
 */
let openTransactions = 0;

/** `begin` of `target` with `fn` in the transaction's scope, counted from its first call until the transaction has ended. */
function watchedBegin(target: postgres.Sql, rest: unknown[], fn: (tx: postgres.TransactionSql) => unknown): Promise<unknown> {
  let entered = false;
  const scope: TransactionScope = { open: true };
  const leave = () => {
    scope.open = false;
    if (!entered) return;
    entered = false;
    if (--openTransactions === 0) inTransaction.disable();
  };
  const scoped = (tx: postgres.TransactionSql) => {
    if (!entered) {
      entered = true;
      openTransactions++;
    }
    return inTransaction.run(scope, () => fn(tx));
  };
  // `finally` passes the result and a rejection on unchanged, after the count is down.
  return (target.begin as (...a: unknown[]) => Promise<unknown>)(...rest, scoped).finally(leave);
}

/**
 * The pool, guarded: a query, `unsafe`, `begin` or `reserve` on the pool from inside a
 * `begin` callback throws at once. Such a query is not part of the transaction (it neither sees
 * its writes nor rolls back with it), and it needs a second connection while the transaction
 * holds one: on the embedded database, which has exactly one, that wait never ends and the
 * whole controller froze (the first apply made the signing key in a second transaction). On
 * PostgreSQL the same shape deadlocks once the pool is exhausted under load.
 * Work started from inside a transaction but meant to run after it (a timer, a deferred
 * publish) leaves the scope with `outsideTransaction`; the in-process bus already delivers in
 * the subscriber's own context.
 */
export function guardPool(sql: postgres.Sql): postgres.Sql {
  const check = (what: string) => {
    if (inTransaction.getStore()?.open) throw new PoolInTransactionError(what);
  };
  // Before the pool's first transaction (query-origin.ts); again after a failure (no database yet).
  let texts: Promise<void> | null = null;
  const textsRun = () =>
    (texts ??= runTransactionTexts(sql).catch((err: unknown) => {
      texts = null;
      throw err;
    }));
  return new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      // sql`…` is a query; sql(value) builds a fragment (identifiers, lists) and is harmless.
      const first = args[0] as { raw?: unknown } | undefined;
      if (Array.isArray(first) && first && "raw" in first) check("a query");
      const query = Reflect.apply(target, thisArg, args);
      releaseQueryOrigin(query);
      return query;
    },
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop === "begin") {
        return async (...args: unknown[]) => {
          check("a second transaction");
          const fn = args[args.length - 1] as (tx: postgres.TransactionSql) => unknown;
          const rest = args.slice(0, -1);
          await textsRun();
          return watchedBegin(target, rest, (tx) => fn(releasingOrigins(tx)));
        };
      }
      if (prop === "unsafe" || prop === "reserve" || prop === "file") {
        return (...args: unknown[]) => {
          check(`sql.${String(prop)}`);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      }
      return value;
    },
  });
}

/**
 * A transaction (or savepoint) whose queries let go of what their origin holds
 * (query-origin.ts), as the pool's do: the first run of a query text inside a transaction
 * would otherwise keep the transaction's callback, and all it holds, for the process's life.
 */
function releasingOrigins(tx: postgres.TransactionSql): postgres.TransactionSql {
  return new Proxy(tx, {
    apply(target, thisArg, args: unknown[]) {
      const query = Reflect.apply(target, thisArg, args);
      releaseQueryOrigin(query);
      return query;
    },
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (prop !== "savepoint" || typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const fn = args[args.length - 1];
        if (typeof fn !== "function") return (value as (...a: unknown[]) => unknown).apply(target, args);
        const rest = args.slice(0, -1);
        return (value as (...a: unknown[]) => unknown).apply(target, [
          ...rest,
          (sp: postgres.TransactionSql) => (fn as (s: postgres.TransactionSql) => unknown)(releasingOrigins(sp)),
        ]);
      };
    },
  });
}

/** Runs `fn` outside any transaction scope (a callback that merely starts inside one). */
export const outsideTransaction = <T>(fn: () => T): T => inTransaction.exit(fn);

export interface Database {
  sql: Sql;
  kind: "postgres" | "embedded";
  /**
   * One trivial query on a connection of its own (PostgreSQL; the embedded database's one
   * connection otherwise): what the health monitor and readiness ask, never queued behind the
   * pool's work.
   */
  probe(): Promise<void>;
  /**
   * A client of its own with one connection, never recycled (PostgreSQL only), for a session
   * whose state must live and die with that connection (the scheduler's advisory lock): ending
   * the client ends the session, where a pooled connection would carry it on unseen. `name`
   * tells it apart in pg_stat_activity.
   */
  session(name: string): Sql;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  url: string | undefined;
  dataDir: string;
  max?: number;
  applicationName?: string;
}

const baseOptions = (applicationName: string) =>
  ({
    onnotice: () => {},
    // A server that does not answer a new connection within this is treated as gone (the
    // default, 30 s, held every request that long during an outage).
    connect_timeout: 5,
    // The wait before a failed connection is opened again, which grows with each failure of
    // the pool: postgres.js's own curve reaches 20 s after seven, so a pool that met a minute's
    // outage stayed shut for 20 s after the database was back. Here it stops at 2 s.
    backoff: (failures: number) => (0.5 + Math.random() / 2) * Math.min(0.1 * 2 ** failures, 2),
    connection: {
      application_name: applicationName,
      // A process that dies or hangs inside a transaction must not hold its locks (and the
      // Idempotency-Key claims they stand for) for long: the server ends such a session.
      idle_in_transaction_session_timeout: 60_000,
    },
  }) as const;

/**
 * The one connection of a `Database.session` client, reserved. Without fetch_types, postgres.js
 * never hands a connection it is still opening to a reserve (the reserve waits for ever): a
 * first query opens it, and the reserve then takes it as it stands.
 */
export async function reserveSession(session: Sql): Promise<Awaited<ReturnType<Sql["reserve"]>>> {
  await session`SELECT 1`;
  return session.reserve();
}

/**
 * PostgreSQL when `url` is set; otherwise an embedded PostgreSQL (PGlite) under `dataDir`,
 * served over the wire protocol by pglite-socket so the same driver, SQL and migrations run.
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const applicationName = options.applicationName ?? "rl-controller";
  const url = options.url;
  if (url) {
    const sql = guardPool(postgres(url, { ...baseOptions(applicationName), max: options.max ?? 10 }));
    const probeSql = postgres(url, { ...baseOptions(`${applicationName} probe`), max: 1, connect_timeout: 2, idle_timeout: 60 });
    return {
      sql,
      kind: "postgres",
      probe: async () => void (await probeSql`SELECT 1`),
      // max_lifetime off: postgres.js otherwise ends a connection after 30 to 60 minutes, and a
      // session lock with it. fetch_types off: postgres.js reads the array types as a connection's
      // first query, a promise of its own that nothing awaits, and a session ended at once while
      // that query ran rejected it unhandled, which ends a Node process (test/scheduler/lock-session.test.ts);
      // the lock's queries use no arrays. Reserve it with reserveSession.
      session: (name) => postgres(url, { ...baseOptions(`${applicationName} ${name}`), max: 1, max_lifetime: null, fetch_types: false }),
      close: async () => {
        await probeSql.end({ timeout: 1 });
        await sql.end({ timeout: 5 });
      },
    };
  }
  return openEmbedded(options.dataDir, applicationName);
}

async function openEmbedded(dataDir: string, applicationName: string): Promise<Database> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const dir = join(dataDir, "pglite");
  await mkdir(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1" });
  await server.start();
  const address = (server as unknown as { server: { address(): { port: number } } }).server.address();
  // PGlite is one backend: one connection at a time, so the pool has one connection and
  // statements queue in order. COPY FROM STDIN does not work over pglite-socket (it hangs),
  // which is why bulk writes use INSERT … SELECT FROM unnest(…) everywhere.
  const sql = guardPool(
    postgres({
      host: "127.0.0.1",
      port: address.port,
      user: "postgres",
      database: "postgres",
      max: 1,
      onnotice: () => {},
      connection: { application_name: applicationName },
    }),
  );
  return {
    sql,
    kind: "embedded",
    probe: async () => void (await sql`SELECT 1`),
    session() {
      // One backend, served one connection at a time: a second client would wait behind the pool.
      throw new Error("the embedded database has one connection: it has no session of its own to give");
    },
    async close() {
      await sql.end({ timeout: 5 });
      await server.stop();
      await db.close();
    },
  };
}

/** Readiness: the database answers a trivial query. */
export async function pingDatabase(db: Db): Promise<void> {
  await db`SELECT 1`;
}
