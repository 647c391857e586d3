import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { ADVISORY_LOCKS, lockForTransaction } from "./advisory-locks.js";
import type { Sql } from "./connect.js";

/** Advisory lock key shared by every controller: migrations and bootstrap run under it. */
export const MIGRATION_LOCK = ADVISORY_LOCKS.migration;

const migrationsDir = fileURLToPath(new URL("../../migrations/", import.meta.url));

/** The database holds migrations this build does not have: a newer controller runs on it. */
export class SchemaTooNewError extends Error {
  override name = "SchemaTooNewError";
  constructor(readonly migrations: string[]) {
    super(
      `the database's schema is newer than this controller knows (migrations ${migrations.join(", ")} are not in this build): ` +
        "run the controller version that migrated it (or a newer one), or restore a backup taken before that upgrade",
    );
  }
}

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
    const rows = await tx<{ version: number; name: string }[]>`SELECT version, name FROM schema_migrations ORDER BY version`;
    const done = new Set(rows.map((r) => r.version));
    // A database a newer controller migrated: this one would read tables it does not know as if
    // it did, and write rows the newer one cannot trust. It refuses before touching anything.
    const known = new Set(files.map((f) => Number(f.slice(0, 4))));
    const unknown = rows.filter((r) => !known.has(r.version));
    if (unknown.length) throw new SchemaTooNewError(unknown.map((r) => r.name));
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
