import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import type { TestProject } from "vitest/node";
import { openDatabase } from "../packages/controller/src/db/connect.js";
import { migrate } from "../packages/controller/src/db/migrate.js";

const migrationsDir = join(import.meta.dirname, "../packages/controller/migrations");

/**
 * Migrates one template database per migration set; every test file clones it
 * (CREATE DATABASE … TEMPLATE), which takes milliseconds instead of a migration run.
 */
export default async function setup(project: TestProject): Promise<void> {
  const adminUrl = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
  const hash = createHash("sha256");
  for (const f of readdirSync(migrationsDir).sort()) hash.update(f).update(readFileSync(join(migrationsDir, f)));
  const template = `rlc_tpl_${hash.digest("hex").slice(0, 12)}`;
  project.provide("templateDatabase", template);
  project.provide("adminDatabaseUrl", adminUrl);
  if (process.env.TEST_DB === "embedded") project.provide("embeddedTemplateDir", await embeddedTemplate(template));

  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    const [exists] = await admin`SELECT 1 FROM pg_database WHERE datname = ${template}`;
    if (exists) return;
    await admin.unsafe(`CREATE DATABASE ${template}`); // unsafe: identifiers cannot be parameters
    const url = new URL(adminUrl);
    url.pathname = `/${template}`;
    const db = postgres(url.toString(), { max: 1, onnotice: () => {} });
    try {
      await migrate(db);
    } finally {
      await db.end();
    }
  } catch (err) {
    // Outside CI a machine without PostgreSQL still runs the pure tests; database tests say why they fail.
    if (process.env.CI === "true") throw err;
    process.stderr.write(`[global-setup] PostgreSQL template not prepared: ${(err as Error).message}\n`);
  } finally {
    await admin.end();
  }
}

/**
 * The embedded database's counterpart of the template: a migrated PGlite data directory that
 * each test file copies. Its initdb alone takes 10-35 s here, a copy under a second or two.
 */
async function embeddedTemplate(name: string): Promise<string> {
  const dir = join(tmpdir(), `${name}_pglite`);
  if (existsSync(dir)) return dir;
  const work = await mkdtemp(join(tmpdir(), `${name}_build_`));
  const db = await openDatabase({ url: undefined, dataDir: work });
  try {
    await migrate(db.sql);
  } finally {
    await db.close();
  }
  await rename(work, dir).catch(async (err) => {
    await rm(work, { recursive: true, force: true });
    if (!existsSync(dir)) throw err;
  });
  return dir;
}

declare module "vitest" {
  export interface ProvidedContext {
    templateDatabase: string;
    adminDatabaseUrl: string;
    embeddedTemplateDir: string;
  }
}
