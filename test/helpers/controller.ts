import type { Clock } from "@rlc/shared/time";
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from "fastify";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, type StartOptions, startController } from "../../packages/controller/src/controller.js";
import { createEmbeddedDatabase, createTestDatabase, type TestDatabase } from "./db.js";

export interface TestController {
  app: FastifyInstance;
  controller: Controller;
  db: TestDatabase;
  /** The bootstrap superadmin key of tenant `default`. */
  rootKey: string;
  /** `app.inject` with a Bearer key. */
  call(key: string | null, opts: InjectOptions): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

/**
 * True when this run's controllers use the embedded database (`TEST_DB=embedded`, what a
 * newcomer's `npm start` runs on) instead of a PostgreSQL database of their own.
 */
export const embeddedRun = process.env.TEST_DB === "embedded";

/** A whole controller (migrated database of its own, bootstrap key) built as production builds it. */
export async function startTestController(
  opts: {
    env?: Record<string, string>;
    clock?: Clock;
    /** Listeners for agents (`grpc`, `nodeHttps`), off unless asked. */
    start?: Pick<StartOptions, "grpc" | "nodeHttps">;
  } = {},
): Promise<TestController> {
  const embedded = embeddedRun ? await createEmbeddedDatabase() : null;
  const db = embedded ?? (await createTestDatabase());
  const dbEnv: Record<string, string> = embedded ? { APP_DATA_DIR: embedded.dataDir } : { DATABASE_URL: db.url };
  const config = loadConfig({ ...dbEnv, LOG_LEVEL: "silent", ...opts.env });
  const controller = await startController(config, { logger: false, ...opts.start, ...(opts.clock ? { clock: opts.clock } : {}) });
  const rootKey = controller.bootstrap.secret!;
  return {
    app: controller.app,
    controller,
    db,
    rootKey,
    call(key, o) {
      const headers = { ...(o.headers ?? {}), ...(key ? { authorization: `Bearer ${key}` } : {}) };
      return controller.app.inject({ ...o, headers });
    },
    async close() {
      // Jobs still waiting (an apply with no agent to answer) stop at their next step rather
      // than hold the worker, and so the close, for their whole timeout.
      await controller.db.sql`UPDATE jobs SET cancel_requested = true WHERE status IN ('queued', 'running')`.catch(() => {});
      await controller.close();
      await db.drop();
    },
  };
}

/** A clock the test moves by hand; `sleep` moves it too, so nothing waits in real time. */
export function manualClock(start = new Date("2026-11-22T10:00:00.000Z")): Clock & { advance(ms: number): void } {
  let now = start.getTime();
  return {
    now: () => now,
    sleep: async (ms) => {
      now += ms;
    },
    advance(ms) {
      now += ms;
    },
  };
}
