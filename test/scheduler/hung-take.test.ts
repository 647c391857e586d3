import { createSystemClock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../packages/controller/src/db/connect.js";
import { SCHEDULER_LOCK, type Scheduler, startScheduler } from "../../packages/controller/src/scheduler/scheduler.js";
import { createSchedulerLock } from "../../packages/controller/src/services/operations/scheduler-lock.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy.js";
import { until } from "../helpers/wait.js";

// The scheduler's take of its lock over a connection that goes silent: the take reaches
// PostgreSQL and gets the lock, and its answer never comes back. The connection runs through a
// proxy that the test makes silent; the database is PostgreSQL (sessions of their own and one lock
// among them: this folder is left to the PostgreSQL run).

let tdb: TestDatabase;
let proxy: TcpProxy;
let db: Database;
let admin: postgres.Sql;

beforeAll(async () => {
  tdb = await createTestDatabase();
  const url = new URL(tdb.url);
  proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
  url.hostname = "127.0.0.1";
  url.port = String(proxy.port);
  db = await openDatabase({ url: url.toString(), dataDir: "", max: 4, applicationName: "rlc-hung-take" });
  admin = postgres(tdb.url, { max: 2, onnotice: () => {} });
});
afterAll(async () => {
  await db?.close();
  await admin?.end({ timeout: 1 });
  await proxy?.close();
  await tdb?.drop();
});

/** The backends that hold the scheduler lock in this test's database. */
async function holders(): Promise<number[]> {
  const rows = await admin<{ pid: number }[]>`
    SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
    WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()
      AND l.classid = 0 AND l.objid = ${SCHEDULER_LOCK} AND l.objsubid = 1`;
  return rows.map((r) => r.pid);
}

describe("a scheduler whose take of the lock never answers", () => {
  // Answers lost while the client's close still gets through (closing the connection ends the
  // session), or the connection silent both ways (only PostgreSQL ending the backend does).
  it.each([
    ["answers lost", false],
    ["silent both ways", true],
  ] as const)(
    "%s: gives the connection up after the deadline: a lock granted on it late ends with it, and a new election leads",
    async (_silent, bothWays) => {
      const warnings: string[] = [];
      const logger = {
        info() {},
        error() {},
        warn: (a: unknown, b?: string) => void warnings.push(typeof a === "string" ? a : (b ?? "")),
      } as unknown as FastifyBaseLogger;

      // Another session holds the lock, so the scheduler keeps trying to take it.
      const blocker = await admin.reserve();
      await blocker`SELECT pg_advisory_lock(${SCHEDULER_LOCK})`;
      let scheduler: Scheduler | undefined;
      try {
        scheduler = startScheduler({ lock: createSchedulerLock(db), clock: createSystemClock(), logger, tasks: [], electionMs: 1000 });

        // The scheduler's connection, as PostgreSQL sees it (its port is the proxy's side of it).
        const taker = await until("the scheduler trying to take the lock", async () => {
          const [row] = await admin<{ pid: number; port: number }[]>`
          SELECT pid, client_port AS port FROM pg_stat_activity
          WHERE datname = current_database() AND application_name LIKE 'rlc-hung-take%'
            AND state = 'idle' AND query ILIKE '%pg_try_advisory_lock%'`;
          return row;
        });
        // Its next take is caught on the way, and reaches PostgreSQL only once the lock is free:
        // there it gets the lock, and its answer never comes back.
        const request = proxy.catchRequest(taker.port);
        expect(request).not.toBeNull();
        await until("the scheduler's next take caught", async () => request!.caught());
        await blocker`SELECT pg_advisory_unlock(${SCHEDULER_LOCK})`;
        request!.forward();
        await until("the lock granted to the stalled connection", async () => (await holders()).includes(taker.pid));
        // Then, in the second case, nothing gets through that connection, not even a close from the client.
        if (bothWays) request!.silence();

        const s = scheduler;
        await until("the scheduler leading over a new connection", async () => s.isLeader(), 20_000);
        const now = await holders();
        expect(now).toHaveLength(1);
        expect(now[0]).not.toBe(taker.pid);
        expect(warnings.some((w) => /taking the scheduler lock took longer than/.test(w))).toBe(true);

        // The stalled session is gone on the server: once the leader stops, another session takes the lock.
        await s.stop();
        scheduler = undefined;
        const other = await until(
          "another session taking the lock",
          async () => {
            const [row] = await blocker<{ ok: boolean }[]>`SELECT pg_try_advisory_lock(${SCHEDULER_LOCK}) AS ok`;
            return row?.ok;
          },
          15_000,
        );
        expect(other).toBe(true);
        expect((await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ${taker.pid}`)[0]?.n).toBe(0);
        await blocker`SELECT pg_advisory_unlock(${SCHEDULER_LOCK})`;
      } finally {
        await scheduler?.stop();
        blocker.release();
      }
    },
    90_000,
  );
});
