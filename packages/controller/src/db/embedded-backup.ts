import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, rename, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";

/**
 * Backup and restore of the embedded database (PGlite under APP_DATA_DIR/pglite): its data
 * directory as one gzipped tar, PGlite's own format. Both run with no controller on that
 * directory (PGlite is one process's). A PostgreSQL deployment uses pg_dump and pg_restore.
 */

const pgliteDir = (dataDir: string) => join(dataDir, "pglite");

/** Writes the embedded database under `dataDir` to `file` (whole, then renamed into place); answers its size. */
export async function backupEmbedded(dataDir: string, file: string): Promise<{ bytes: number; schema_version: number }> {
  const dir = pgliteDir(dataDir);
  if (!existsSync(dir)) throw new Error(`no embedded database under ${dataDir} (${dir} does not exist)`);
  const { PGlite } = await import("@electric-sql/pglite");
  const db = await PGlite.create(dir);
  try {
    const version = await schemaVersion(db);
    const dump = await db.dumpDataDir("gzip");
    const bytes = Buffer.from(await dump.arrayBuffer());
    await mkdir(dirname(file), { recursive: true });
    const tmp = `${file}.${process.pid}.partial`;
    await writeFile(tmp, bytes, { mode: 0o600 });
    await rename(tmp, file);
    return { bytes: bytes.length, schema_version: version };
  } finally {
    await db.close();
  }
}

/** Restores `file` as the embedded database under `dataDir`, which must hold none yet. */
export async function restoreEmbedded(dataDir: string, file: string): Promise<{ schema_version: number }> {
  const dir = pgliteDir(dataDir);
  if (existsSync(dir) && (await readdir(dir)).length > 0) {
    throw new Error(`${dir} already holds a database: restore into an empty APP_DATA_DIR (the running data is never overwritten)`);
  }
  const bytes = await readFile(file);
  await mkdir(dir, { recursive: true });
  const { PGlite } = await import("@electric-sql/pglite");
  const db = await PGlite.create(dir, { loadDataDir: new Blob([bytes]) });
  try {
    return { schema_version: await schemaVersion(db) };
  } finally {
    await db.close();
  }
}

async function schemaVersion(db: { query<T>(q: string): Promise<{ rows: T[] }> }): Promise<number> {
  const { rows } = await db.query<{ v: number | null }>("SELECT max(version) AS v FROM schema_migrations");
  return rows[0]?.v ?? 0;
}
