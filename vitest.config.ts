import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(`./packages/${p}`, import.meta.url));

// Tests run against the TypeScript sources of every workspace package, so a change in
// packages/shared is seen by the controller's tests without a build in between.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@rlc\/shared\/(prefix|schemas|bundle|bird)$/, replacement: src("shared/src/$1/index.ts") },
      { find: /^@rlc\/shared\/(errors|time|version)$/, replacement: src("shared/src/$1.ts") },
      { find: /^@rlc\/shared$/, replacement: src("shared/src/index.ts") },
      { find: /^@rlc\/client$/, replacement: src("client/src/index.ts") },
      { find: /^@rlc\/proto$/, replacement: src("proto/src/index.ts") },
      { find: /^@rlc\/agent$/, replacement: src("agent/src/index.ts") },
    ],
  },
  test: {
    include: ["packages/*/src/**/*.test.ts", "test/**/*.test.ts"],
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Two test files at a time (RLC_TEST_FORKS to change it): most of a file's time is spent waiting
    // on a daemon, a timer or the database, and every file has its own database, ports, tenants and
    // BIRD sockets, so two share this 2-core machine well; one fork took the suite past 30 minutes.
    poolOptions: { forks: { minForks: 1, maxForks: Number(process.env.RLC_TEST_FORKS ?? 2) } },
    reporters: ["default"],
  },
});
