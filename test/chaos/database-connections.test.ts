import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { until } from "../helpers/wait.js";
import { assertBuilt, type ControllerProcess, newBootstrapKey, startControllerProcess } from "../process-roles/controller-process.js";

// What a PostgreSQL failover or a proxy restart does to the controller: every one of its
// database connections is terminated at once, the scheduler's reserved lock connection among
// them. The process must stay up, answer, and go on working on new connections.
const root = fileURLToPath(new URL("../../", import.meta.url));

/** Every backend connected to `db`, terminated from a connection of the test's own. */
async function terminateAll(db: TestDatabase): Promise<number> {
  const admin = postgres(db.url, { max: 1, onnotice: () => {} });
  try {
    const rows = await admin`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = ${db.name} AND pid <> pg_backend_pid()`;
    return rows.length;
  } finally {
    await admin.end();
  }
}

describe("the postgres.js driver, as installed (patches/postgres+3.4.9.patch)", () => {
  it("a query on a reserved connection whose backend was terminated fails with CONNECTION_CLOSED instead of throwing from a timer", async () => {
    const db = await createTestDatabase();
    try {
      // In a process of its own: without the patch the driver's throw ends that process.
      const script = `
        import postgres from "postgres";
        const sql = postgres(${JSON.stringify(db.url)}, { max: 2, onnotice: () => {} });
        const r = await sql.reserve();
        const [{ pid }] = await r\`select pg_backend_pid() as pid\`;
        const other = postgres(${JSON.stringify(db.url)}, { max: 1 });
        await other\`select pg_terminate_backend(\${pid})\`;
        const codes = [];
        for (let i = 0; i < 3; i++) {
          await r\`select 1\`.then(() => codes.push("ok"), (e) => codes.push(e.code));
          await new Promise((res) => setTimeout(res, 50));
        }
        await new Promise((res) => setTimeout(res, 200));
        console.log(JSON.stringify(codes));
        await other.end(); await sql.end({ timeout: 1 });
      `;
      const child = spawn(process.execPath, ["--input-type=module", "-e", script], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      child.stdout.on("data", (c: Buffer) => void (out += c));
      child.stderr.on("data", (c: Buffer) => void (err += c));
      const code = await new Promise<number | null>((r) => child.once("exit", r));
      expect(code, err).toBe(0);
      const codes = JSON.parse(out.trim().split("\n").pop()!);
      expect(codes.slice(1)).toEqual(["CONNECTION_CLOSED", "CONNECTION_CLOSED"]);
    } finally {
      await db.drop();
    }
  });
});

describe("a controller whose database connections are all terminated (a failover)", () => {
  const running: ControllerProcess[] = [];
  let db: TestDatabase;
  let dataDir: string;
  const key = newBootstrapKey();

  beforeAll(async () => {
    assertBuilt(["process-guard.js"]);
    db = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), "rl-chaos-"));
  });
  afterAll(async () => {
    for (const p of running) await p.stop();
    await db?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("stays up, answers, takes the scheduler lock again and writes on new connections", async () => {
    const c = await startControllerProcess(running, "controller", { DATABASE_URL: db.url, BOOTSTRAP_API_KEY: key, APP_DATA_DIR: dataDir });
    await c.waitFor("this process now runs the periodic tasks", 20_000);
    for (let round = 0; round < 3; round++) {
      // Between rounds the pool has reconnected only what was used: use it, then cut it again.
      // The first requests after a cut may find dead connections and answer 503 without opening
      // one: used until one answers, so there is a live connection to cut.
      for (let tries = 0; tries < 40; tries++) {
        const r = await c.call(key, "GET", "/v1/modules").catch(() => null);
        if (r?.status === 200) break;
        await new Promise((res) => setTimeout(res, 250));
      }
      expect(await terminateAll(db)).toBeGreaterThan(0);
      await new Promise((r) => setTimeout(r, 300));
    }
    // Long enough for every deferred write and the next elections to have run.
    await new Promise((r) => setTimeout(r, 6000));
    expect(c.alive, c.lines.slice(-20).join("\n")).toBe(true);
    expect(c.has("closing after an error")).toBe(false);
    const created = await until("a write on a new connection", async () => {
      const r = await c.call(key, "POST", "/v1/modules", { name: `after-failover-${Date.now()}`, type: "IP_RANGES" }).catch(() => null);
      return r?.status === 201 ? r : null;
    });
    expect(created.json.name).toMatch(/^after-failover-/);
    expect((await fetch(`${c.base}/v1/ready`)).status).toBe(200);
    // The scheduler leads again: the lock was taken on a new connection.
    await until("the scheduler's lead again", async () => c.lines.filter((l) => l.includes("this process now runs the periodic tasks")).length >= 2, 20_000);
  });
});
