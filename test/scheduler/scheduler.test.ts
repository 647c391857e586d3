import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, startController } from "../../packages/controller/src/controller.js";
import { SCHEDULER_LOCK } from "../../packages/controller/src/scheduler/scheduler.js";
import { runtimeLogsAutoTask } from "../../packages/controller/src/scheduler/tasks.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

let t: TestController;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-sched-"));
  t = await startTestController({ env: { APP_RUNTIME_LOGS_DIR: dir } });
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("scheduler", () => {
  it("exactly one of two controllers on one database leads, and the other takes over when it goes", async () => {
    const config = loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: "silent", APP_SERVICE: "scheduler" });
    const a: Controller = await startController(config, { logger: false, electionMs: 100 });
    const b: Controller = await startController(config, { logger: false, electionMs: 100 });
    try {
      const all = [t.controller, a, b];
      const leaders = () => all.filter((c) => c.scheduler!.isLeader());
      await new Promise((r) => setTimeout(r, 400));
      expect(leaders()).toHaveLength(1);
      const first = leaders()[0]!;
      // The leader goes away (its lock with it): another takes over at its next election.
      await first.scheduler!.stop();
      await until("one leader", async () => leaders().length === 1 && leaders()[0] !== first, 3000);
      await new Promise((r) => setTimeout(r, 300));
      expect(leaders()).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a leader whose lock connection is killed (pg_terminate_backend) steps down: never two leaders", async () => {
    // Only these two run a scheduler: the test controller's own steps aside first.
    await t.controller.scheduler!.stop();
    const config = loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: "silent", APP_SERVICE: "scheduler" });
    const a: Controller = await startController(config, { logger: false, electionMs: 100 });
    const b: Controller = await startController(config, { logger: false, electionMs: 100 });
    const sql = t.controller.db.sql;
    const holders = async () =>
      (
        await sql<{ pid: number }[]>`
          SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database
          WHERE l.locktype = 'advisory' AND l.granted AND d.datname = current_database()
            AND l.classid = 0 AND l.objid = ${SCHEDULER_LOCK} AND l.objsubid = 1`
      ).map((r) => r.pid);
    // Sessions on which a take of the lock has answered: one for each process that has held an election.
    const electing = async () =>
      (
        await sql<{ n: number }[]>`
          SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE datname = current_database() AND application_name LIKE '%scheduler lock'
            AND state = 'idle' AND query ILIKE '%pg_try_advisory_lock%'`
      )[0]!.n;
    try {
      const leaders = () => [a, b].filter((c) => c.scheduler!.isLeader());
      await until("one leader", async () => leaders().length === 1, 3000);
      // Both have held an election before the kill: a process leads at once from its first one
      // (a starting process waits for no one), so a first take that reached PostgreSQL just after
      // the kill would make it lead beside the old leader until that one's next check.
      await until("both processes electing", async () => (await electing()) === 2);
      const first = leaders()[0]!;
      const [pid] = await holders();
      expect(pid).toBeDefined();
      await sql`SELECT pg_terminate_backend(${pid!})`;
      // Sampled every 20 ms for 3 s: at no moment do both processes lead.
      let both = 0;
      let handedOver = false;
      for (let i = 0; i < 150; i++) {
        if (leaders().length > 1) both++;
        const h = await holders();
        if (h.length === 1 && h[0] !== pid && leaders().length === 1) handedOver = true;
        await new Promise((r) => setTimeout(r, 20));
      }
      expect(both).toBe(0);
      expect(handedOver).toBe(true);
      expect(leaders()).toHaveLength(1);
      // Whoever leads now holds the lock on a live backend; the old leader knows if it is not it.
      const now = leaders()[0]!;
      expect((await holders()).length).toBe(1);
      if (now !== first) expect(first.scheduler!.isLeader()).toBe(false);
    } finally {
      await a.close();
      await b.close();
    }
  }, 90_000); // two controller starts and closes, one over a killed connection: slow on a loaded machine

  it("the automatic runtime-log cleanup follows each tenant's settings and records auto:scheduler", async () => {
    await writeFile(join(dir, "big.log"), "x".repeat(5000));
    await writeFile(join(dir, "small.log"), "y");
    const task = runtimeLogsAutoTask(t.controller.deps.services.periodic);
    await task.run(new Date());
    expect((await stat(join(dir, "big.log"))).size).toBe(5000); // not enabled yet

    await t.call(t.rootKey, {
      method: "PATCH",
      url: "/v1/settings",
      payload: { runtime_logs_auto_enabled: true, runtime_logs_auto_threshold_bytes: 1000, runtime_logs_auto_interval_minutes: 5 },
    });
    const now = new Date();
    await task.run(now);
    expect((await stat(join(dir, "big.log"))).size).toBe(0);
    expect((await stat(join(dir, "small.log"))).size).toBe(1);
    const audit = (await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/cleanup-audit" })).json().items;
    expect(audit[0]).toMatchObject({ filename: "big.log", actor: "auto:scheduler", actor_prefix: "auto:scheduler", dry_run: false, result: "ok" });

    // Within the interval nothing runs again; after it, it does.
    await writeFile(join(dir, "big.log"), "x".repeat(5000));
    await task.run(new Date(now.getTime() + 60_000));
    expect((await stat(join(dir, "big.log"))).size).toBe(5000);
    await task.run(new Date(now.getTime() + 6 * 60_000));
    expect((await stat(join(dir, "big.log"))).size).toBe(0);
  });
});
