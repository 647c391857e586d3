import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import postgres from "postgres";
import type { TestProject } from "vitest/node";
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

declare module "vitest" {
  export interface ProvidedContext {
    templateDatabase: string;
    adminDatabaseUrl: string;
  }
}
