import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ADVISORY_LOCKS, lockForTransaction } from "./advisory-locks.js";
import type { Sql } from "./connect.js";

/** Advisory lock key shared by every controller: migrations and bootstrap run under it. */
export const MIGRATION_LOCK = ADVISORY_LOCKS.migration;

const migrationsDir = fileURLToPath(new URL("../../migrations/", import.meta.url));

export interface MigrationResult {
  applied: string[];
  current: number;
}

/**
 * Applies the numbered plain-SQL migrations that are not applied yet, all in one transaction
 * under a transaction-scoped advisory lock: two controllers starting at once serialise here,
 * and the second finds nothing left to do.
 */
export async function migrate(sql: Sql): Promise<MigrationResult> {
  const files = (await readdir(migrationsDir)).filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f)).sort();
  return sql.begin(async (tx) => {
    await lockForTransaction(tx, MIGRATION_LOCK);
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
    const done = new Set((await tx<{ version: number }[]>`SELECT version FROM schema_migrations`).map((r) => r.version));
    const applied: string[] = [];
    for (const file of files) {
      const version = Number(file.slice(0, 4));
      if (done.has(version)) continue;
      const text = await readFile(`${migrationsDir}${file}`, "utf8");
      // unsafe: a migration is a trusted multi-statement script from the repository.
      await tx.unsafe(text);
      await tx`INSERT INTO schema_migrations (version, name) VALUES (${version}, ${file})`;
      applied.push(file);
    }
    const current = files.length ? Number(files[files.length - 1]!.slice(0, 4)) : 0;
    return { applied, current };
  });
}
