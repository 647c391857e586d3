import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

// The same API, job, ingest, deploy and maintenance suites on the embedded database (what
// `npm start` runs with no DATABASE_URL): every controller a test starts gets a PGlite data
// directory of its own (TEST_DB=embedded, see test/helpers/controller.ts).
// Left to the PostgreSQL run, because they need two processes on one database, which an
// embedded database (owned by one process) cannot be: a second replica (auth cache, scheduler
// hand-over, gRPC TLS restarts, split process roles), a killed worker process, the offline CLI,
// a transaction of the test's own holding a lock while the controller runs (refresh-lock).
process.env.TEST_DB = "embedded"; // read by test/global-setup.ts in this (the main) process

// Spread, not mergeConfig: mergeConfig would append these lists to the base ones.
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      "test/api/**/*.test.ts",
      "test/jobs/**/*.test.ts",
      "test/ingest/**/*.test.ts",
      "test/deploy/**/*.test.ts",
      "test/maintenance/**/*.test.ts",
      "test/security/**/*.test.ts",
      "test/embedded.test.ts",
      // The NATS under a controller replaced by a fresh server: the tenants it restores come from either database.
      "test/chaos/nats-fresh-server.test.ts",
      // The job worker's own tests open a database of the run's kind (test/helpers/db.ts, openTestDatabase).
      "packages/controller/src/jobs/**/*.test.ts",
    ],
    exclude: [
      "test/api/auth-cache.test.ts",
      "test/deploy/grpc.test.ts",
      "test/ingest/worker-killed.test.ts",
      "test/ingest/refresh-lock.test.ts",
      "**/node_modules/**",
    ],
    env: { TEST_DB: "embedded" },
  },
});
