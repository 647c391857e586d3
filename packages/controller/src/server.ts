#!/usr/bin/env node
import closeWithGrace from "close-with-grace";
import { ConfigError, loadConfig } from "./config.js";
import { startController } from "./controller.js";
import { announceBootstrapKey } from "./services/access/bootstrap-notice.js";

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
  closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
    if (err) app.log.error({ err }, "closing after an error");
    else app.log.info({ signal }, "closing");
    await controller.close();
  });
}

main().catch((err) => {
  if (err instanceof ConfigError) process.stderr.write(`${err.message}\n`);
  else process.stderr.write(`controller failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
