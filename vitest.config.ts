import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const src = (p: string) => fileURLToPath(new URL(`./packages/${p}`, import.meta.url));

// Tests run against the TypeScript sources of every workspace package, so a change in
// packages/shared is seen by the controller's tests without a build in between.
export default defineConfig({
  resolve: {
    alias: [
      { find: /^@rlc\/shared\/(prefix|schemas|bundle|bird)$/, replacement: src("shared/src/$1/index.ts") },
      { find: /^@rlc\/shared\/(errors|time)$/, replacement: src("shared/src/$1.ts") },
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
    reporters: ["default"],
  },
});
