import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, startController } from "../../packages/controller/src/controller.js";
import { runtimeLogsAutoTask } from "../../packages/controller/src/scheduler/tasks.js";
import { startTestController, type TestController } from "../helpers/controller.js";

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

async function until(check: () => boolean, ms: number) {
  const end = Date.now() + ms;
  while (Date.now() < end && !check()) await new Promise((r) => setTimeout(r, 50));
  return check();
}

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
      expect(await until(() => leaders().length === 1 && leaders()[0] !== first, 3000)).toBe(true);
      await new Promise((r) => setTimeout(r, 300));
      expect(leaders()).toHaveLength(1);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("the automatic runtime-log cleanup follows each tenant's settings and records auto:scheduler", async () => {
    await writeFile(join(dir, "big.log"), "x".repeat(5000));
    await writeFile(join(dir, "small.log"), "y");
    const task = runtimeLogsAutoTask(t.controller.db.sql, t.controller.deps.services.runtimeLogs);
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
