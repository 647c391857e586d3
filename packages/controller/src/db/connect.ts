import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import postgres from "postgres";

export type Sql = postgres.Sql;
/** A connection or a transaction: every query function takes one of these. */
export type Db = postgres.Sql | postgres.TransactionSql;

export interface Database {
  sql: Sql;
  kind: "postgres" | "embedded";
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  url: string | undefined;
  dataDir: string;
  max?: number;
  applicationName?: string;
}

const baseOptions = (applicationName: string) =>
  ({
    onnotice: () => {},
    connection: {
      application_name: applicationName,
      // A process that dies or hangs inside a transaction must not hold its locks (and the
      // Idempotency-Key claims they stand for) for long: the server ends such a session.
      idle_in_transaction_session_timeout: 60_000,
    },
  }) as const;

/**
 * PostgreSQL when `url` is set; otherwise an embedded PostgreSQL (PGlite) under `dataDir`,
 * served over the wire protocol by pglite-socket so the same driver, SQL and migrations run.
 */
export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const applicationName = options.applicationName ?? "rl-controller";
  if (options.url) {
    const sql = postgres(options.url, { ...baseOptions(applicationName), max: options.max ?? 10 });
    return { sql, kind: "postgres", close: () => sql.end({ timeout: 5 }) };
  }
  return openEmbedded(options.dataDir, applicationName);
}

async function openEmbedded(dataDir: string, applicationName: string): Promise<Database> {
  const { PGlite } = await import("@electric-sql/pglite");
  const { PGLiteSocketServer } = await import("@electric-sql/pglite-socket");
  const dir = join(dataDir, "pglite");
  await mkdir(dir, { recursive: true });
  const db = await PGlite.create(dir);
  const server = new PGLiteSocketServer({ db, port: 0, host: "127.0.0.1" });
  await server.start();
  const address = (server as unknown as { server: { address(): { port: number } } }).server.address();
  // PGlite is one backend: one connection at a time, so the pool has one connection and
  // statements queue in order. COPY FROM STDIN does not work over pglite-socket (it hangs),
  // which is why bulk writes use INSERT … SELECT FROM unnest(…) everywhere.
  const sql = postgres({
    host: "127.0.0.1",
    port: address.port,
    user: "postgres",
    database: "postgres",
    max: 1,
    onnotice: () => {},
    connection: { application_name: applicationName },
  });
  return {
    sql,
    kind: "embedded",
    async close() {
      await sql.end({ timeout: 5 });
      await server.stop();
      await db.close();
    },
  };
}
