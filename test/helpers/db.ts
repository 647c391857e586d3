import { randomBytes } from "node:crypto";
import { cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { inject } from "vitest";
import { type Database, openDatabase } from "../../packages/controller/src/db/connect.js";

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh, migrated database for one test file, cloned from the template of global-setup. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject("adminDatabaseUrl");
  const template = inject("templateDatabase");
  const name = `rlc_t_${randomBytes(6).toString("hex")}`;
  const admin = postgres(adminUrl, { max: 1, onnotice: () => {} });
  try {
    // unsafe: database names cannot be bound parameters; both are generated here.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.unsafe(`CREATE DATABASE ${name} TEMPLATE ${template}`);
        break;
      } catch (err) {
        // Two files cloning at the same instant can see "source database is being accessed".
        if (attempt >= 20 || !/being accessed/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 200));
      }
    }
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    async drop() {
      const a = postgres(adminUrl, { max: 1, onnotice: () => {} });
      try {
        await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await a.end();
      }
    },
  };
}

/** An embedded database in a directory of its own (a copy of global-setup's migrated template), shaped like a PostgreSQL test database. */
export async function createEmbeddedDatabase(): Promise<TestDatabase & { dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), "rlc-embedded-"));
  await cp(inject("embeddedTemplateDir"), dataDir, { recursive: true });
  return { url: "", name: "postgres", dataDir, drop: () => rm(dataDir, { recursive: true, force: true }) };
}

/**
 * A migrated database of this run's kind for a test that needs one without a controller: a
 * PostgreSQL database of its own, or with `TEST_DB=embedded` an embedded one (the controller's
 * own `openDatabase` either way). `close` ends the connections and drops it.
 */
export async function openTestDatabase(): Promise<Database & { close(): Promise<void> }> {
  const embedded = process.env.TEST_DB === "embedded" ? await createEmbeddedDatabase() : null;
  const created = embedded ?? (await createTestDatabase());
  const db = await openDatabase({ url: embedded ? undefined : created.url, dataDir: embedded?.dataDir ?? "", max: 4 });
  return {
    ...db,
    async close() {
      await db.close();
      await created.drop();
    },
  };
}
