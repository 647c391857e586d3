import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import postgres from "postgres";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { assertBuilt, ControllerProcess, freePort, newBootstrapKey, startControllerProcess } from "../process-roles/controller-process.js";

// Replicas on one PostgreSQL must share the data key that seals its secrets (peer passwords,
// DoH tokens, signing-key seeds). One that starts with another key, or with none while the
// database names one, refuses to start and says what to do — it used to start and answer 500.
const running: ControllerProcess[] = [];
let dir: string;

async function exitOf(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const p = new ControllerProcess("refused", await freePort(), env);
  running.push(p);
  const code = await Promise.race([p.exited, new Promise<"up">((r) => setTimeout(() => r("up"), 30_000))]);
  if (code === "up") throw new Error(`the controller did not exit:\n${p.lines.slice(-20).join("\n")}`);
  return { code, output: p.lines.join("\n") };
}

describe("the data key and the schema, checked against the database at start", () => {
  let db: TestDatabase;
  const key = newBootstrapKey();
  beforeAll(async () => {
    assertBuilt(["services/access/data-key.js"]);
    dir = await mkdtemp(join(tmpdir(), "rl-keys-"));
    db = await createTestDatabase();
  });
  afterEach(async () => {
    for (const p of running.splice(0)) await p.stop();
  });
  afterAll(async () => {
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  it("a second replica without the key, or with another one, refuses to start with what to do; with the same key file it starts", async () => {
    const first = await startControllerProcess(running, "first", { DATABASE_URL: db.url, BOOTSTRAP_API_KEY: key, APP_DATA_DIR: join(dir, "a") });
    expect(first.has("recorded in the database")).toBe(true);
    // Something sealed: a signing key (made on first use).
    expect((await first.call(key, "GET", "/v1/nodes/signing-keys")).status).toBe(200);

    const none = await exitOf({ DATABASE_URL: db.url, APP_DATA_DIR: join(dir, "b"), APP_SERVICE: "worker", HTTP_PORT: String(await freePort()) });
    expect(none.code).toBe(1);
    expect(none.output).toMatch(/sealed with data key [0-9a-f]{16} and this process has none/);
    expect(none.output).toContain("APP_SECRET_KEY_FILE");
    expect(none.output).not.toMatch(/\n\s+at /); // a message, not a stack

    const otherKey = join(dir, "other.key");
    await writeFile(otherKey, randomBytes(32).toString("base64"), { mode: 0o600 });
    const other = await exitOf({ DATABASE_URL: db.url, APP_SECRET_KEY_FILE: otherKey, APP_SERVICE: "worker" });
    expect(other.code).toBe(1);
    expect(other.output).toMatch(/is not the one that sealed this database's secrets/);

    const shared = join(dir, "shared.key");
    await writeFile(shared, await readFile(join(dir, "a", "secret.key")), { mode: 0o600 });
    const second = await startControllerProcess(running, "second", { DATABASE_URL: db.url, BOOTSTRAP_API_KEY: key, APP_SECRET_KEY_FILE: shared });
    const enrolled = await second.call(key, "POST", "/v1/speakers", { name: "edge-k", mode: "remote", router_id: "192.0.2.40", asn: 65010 });
    expect(enrolled.status).toBe(201);
    const answer = await fetch(`${second.base}/v1/nodes/enroll`, {
      method: "POST",
      headers: { authorization: `Bearer ${enrolled.json.enrollment_token}`, "content-type": "application/json" },
      body: JSON.stringify({ hostname: "k.example", agent_version: "1.0.0" }),
    });
    expect(answer.status).toBe(201);
  });

  it("a database whose schema is newer than this controller knows is refused, untouched", async () => {
    const admin = postgres(db.url, { max: 1, onnotice: () => {} });
    try {
      await admin`INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_from_the_future.sql')`;
      const refused = await exitOf({ DATABASE_URL: db.url, APP_SECRET_KEY_FILE: join(dir, "shared.key") });
      expect(refused.code).toBe(1);
      expect(refused.output).toMatch(/schema is newer than this controller knows \(migrations 9999_from_the_future\.sql/);
      const rows = await admin<{ n: number }[]>`SELECT count(*)::int AS n FROM schema_migrations WHERE version = 9999`;
      expect(rows[0]?.n).toBe(1);
    } finally {
      await admin`DELETE FROM schema_migrations WHERE version = 9999`;
      await admin.end();
    }
  });
});
