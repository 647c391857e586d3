import { createConnection, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Database, openDatabase, reserveSession } from "../../packages/controller/src/db/connect.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { until } from "../helpers/wait.js";

// The scheduler lock's session (Database.session) is ended at once when a take does not answer
// (end({ timeout: 0 })). Ended while postgres.js was still setting its connection up, it must
// leave nothing behind that rejects unhandled: a process of Node's defaults dies of that. The
// connection runs through a proxy that passes the server's answers until the first
// ReadyForQuery and holds them after, so the end falls exactly after the setup's first query.

let tdb: TestDatabase;
let db: Database;
let server: Server;
let readySeen = false;
const sockets: Socket[] = [];

beforeAll(async () => {
  tdb = await createTestDatabase();
  const target = new URL(tdb.url);
  server = createServer((client) => {
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    sockets.push(client, upstream);
    client.on("error", () => {}).on("data", (chunk) => upstream.write(chunk));
    upstream
      .on("error", () => {})
      .on("data", (chunk: Buffer) => {
        if (readySeen) return; // held: the answers to anything after the first ReadyForQuery
        client.write(chunk);
        // ReadyForQuery: 'Z', length 5, status.
        for (let i = 0; i + 4 < chunk.length; i++) if (chunk[i] === 0x5a && chunk.readUInt32BE(i + 1) === 5) readySeen = true;
      });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = new URL(tdb.url);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as { port: number }).port);
  db = await openDatabase({ url: url.toString(), dataDir: "", max: 2, applicationName: "rlc-lock-session" });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => server?.close(r));
  await db?.close();
  await tdb?.drop();
});

it("a lock session ended at once while its connection is being set up leaves no unhandled rejection", async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const session = db.session("lock probe");
    const reserving = reserveSession(session).then(
      () => "reserved",
      () => "failed",
    );
    // Set up, and whatever it asks next (if anything) is under way with no answer coming.
    await until("the session set up", async () => readySeen, 10_000);
    await new Promise((r) => setTimeout(r, 200));
    await session.end({ timeout: 0 });
    expect(["reserved", "failed"]).toContain(await reserving);
    await new Promise((r) => setTimeout(r, 300));
    expect(unhandled).toEqual([]);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});
