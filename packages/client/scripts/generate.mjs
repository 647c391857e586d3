// Regenerates openapi.json and src/schema.d.ts from the built controller (`npx turbo run build`
// first). It starts the controller in this process, without listening, on DATABASE_URL when set,
// otherwise on an embedded database in a temporary directory (which takes a few seconds to create).
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { snapshotOf, typesOf } from "./snapshot.mjs";

const controllerDist = new URL("../../controller/dist/", import.meta.url);
const { loadConfig } = await import(new URL("config.js", controllerDist).href);
const { startController } = await import(new URL("controller.js", controllerDist).href);

const dataDir = process.env.DATABASE_URL ? null : await mkdtemp(join(tmpdir(), "rlc-client-generate-"));
const env = process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : { APP_DATA_DIR: dataDir };
let doc;
const controller = await startController(loadConfig({ ...env, LOG_LEVEL: "silent" }), { logger: false });
try {
  const res = await controller.app.inject({ method: "GET", url: "/v1/openapi.json" });
  if (res.statusCode !== 200) throw new Error(`GET /v1/openapi.json answered ${res.statusCode}`);
  doc = res.json();
} finally {
  await controller.close();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}

await writeFile(new URL("../openapi.json", import.meta.url), snapshotOf(doc));
await writeFile(new URL("../src/schema.d.ts", import.meta.url), await typesOf(doc));
const count = Object.values(doc.paths).reduce((n, item) => n + Object.keys(item).length, 0);
process.stdout.write(`openapi.json and src/schema.d.ts written (${count} operations)\n`);
