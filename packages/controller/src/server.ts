#!/usr/bin/env node
import closeWithGrace from "close-with-grace";
import { ConfigError, loadConfig } from "./config.js";
import { startController } from "./controller.js";
import { SchemaTooNewError } from "./db/migrate.js";
import { installUncaughtRule, isPostgresDriverError } from "./process-guard.js";
import { announceBootstrapKey } from "./services/access/bootstrap-notice.js";
import { DataKeyMismatchError } from "./services/access/data-key.js";

/** The process: configuration, start, listen, print where, close gracefully on signals. */
async function main() {
  const config = loadConfig();
  const host = config.HTTP_HOST === "0.0.0.0" || config.HTTP_HOST === "::" ? "127.0.0.1" : config.HTTP_HOST;
  const controller = await startController(config, {
    grpc: true,
    nodeHttps: true,
    onBootstrap: (bootstrap) =>
      announceBootstrapKey({
        bootstrap,
        fromEnv: Boolean(config.BOOTSTRAP_API_KEY),
        isTTY: process.stdout.isTTY === true,
        dataDir: config.APP_DATA_DIR,
        shown: `http://${host}:${config.HTTP_PORT}`,
        write: (text) => process.stdout.write(text),
      }),
  });
  const { app } = controller;
  const address = await app.listen({ host: config.HTTP_HOST, port: config.HTTP_PORT });
  const shown = address.replace("0.0.0.0", "127.0.0.1");
  const db = controller.db.kind === "embedded" ? `embedded PostgreSQL under ${config.APP_DATA_DIR}` : "PostgreSQL (DATABASE_URL)";
  process.stdout.write(`route-list controller listening on ${shown} (${db}; API reference ${shown}/docs)\n`);
  // Uncaught exceptions are ours to judge (process-guard.ts); signals and unhandled rejections
  // close gracefully as before.
  const grace = closeWithGrace({ delay: 10_000, skip: ["uncaughtException"] }, async ({ err, signal }) => {
    if (err) app.log.error({ err }, "closing after an error");
    else app.log.info({ signal }, "closing");
    await controller.close();
  });
  installUncaughtRule({
    survivable: (err) => controller.db.kind !== "embedded" && isPostgresDriverError(err),
    onSurvived: (err) => {
      controller.deps.metrics.survivedUncaught("database_driver");
      app.log.error({ err }, "a database connection failed outside any query; its queries were failed or retried, the process keeps running");
    },
    onFatal: (err) => {
      app.log.error({ err }, "closing after an error");
      const timer = setTimeout(() => process.exit(1), 10_000);
      timer.unref();
      grace.uninstall();
      void controller.close().finally(() => process.exit(1));
    },
  });
}

main().catch((err) => {
  // What an operator must fix (configuration, a key, a database from a newer version) is said plainly, without a stack.
  if (err instanceof ConfigError || err instanceof DataKeyMismatchError || err instanceof SchemaTooNewError) process.stderr.write(`${err.message}\n`);
  else process.stderr.write(`controller failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
