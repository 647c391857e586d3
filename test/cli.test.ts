import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./helpers/db.js";

const run = promisify(execFile);
const cli = join(import.meta.dirname, "../packages/controller/dist/cli.js");
let db: TestDatabase;

/** Runs the CLI; `env` replaces the database settings of the test's own database. */
async function exec(args: string[], env: Record<string, string> = { DATABASE_URL: db.url }) {
  const { DATABASE_URL: _u, APP_DATA_DIR: _d, ...rest } = process.env;
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { env: { ...rest, ...env } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function controller(...args: string[]) {
  const r = await exec(args);
  return { code: r.code, json: JSON.parse(r.code === 0 ? r.stdout : r.stderr) };
}

beforeAll(async () => {
  if (!existsSync(cli)) throw new Error("packages/controller/dist/cli.js is missing: npm test builds it (npm run build)");
  db = await createTestDatabase();
});
afterAll(async () => db?.drop());

describe("controller CLI", () => {
  it("migrate, tenant create and key create each print one JSON object", async () => {
    const migrated = await controller("migrate");
    expect(migrated.code).toBe(0);
    expect(migrated.json.schema_version).toBeGreaterThanOrEqual(1);

    const tenant = await controller("tenant", "create", "cli-tenant");
    expect(tenant.code).toBe(0);
    expect(tenant.json).toMatchObject({ name: "cli-tenant", admin_key: { role: "admin" } });
    expect(tenant.json.admin_key.secret).toMatch(/^rlk_/);

    const key = await controller("key", "create", "--tenant", "cli-tenant", "--role", "viewer");
    expect(key.code).toBe(0);
    expect(key.json).toMatchObject({ role: "viewer", tenant_id: tenant.json.tenant_id });

    const again = await controller("tenant", "create", "cli-tenant");
    expect(again.code).toBe(1);
    expect(again.json.error).toEqual(expect.any(String));
  });

  it("misuse exits 2 with a plain-text message naming the problem", async () => {
    const cases: [string[], RegExp][] = [
      [["key", "create", "--tenant", "nope", "--role", "viewer"], /no tenant named nope/],
      [["key", "create", "--tenant", "cli-tenant", "--role", "root"], /--role viewer\|operator\|admin\|superadmin/],
      [["key", "create", "--tenant", "x", "--role", "viewer", "--colour", "red"], /Unknown option '--colour'/],
      [["frobnicate"], /unknown command: frobnicate/],
      [["migrate", "now"], /migrate takes no arguments/],
      [["tenant", "create"], /tenant create takes one NAME/],
      [["nats", "init"], /nats init takes one DIR/],
    ];
    for (const [args, message] of cases) {
      const r = await exec(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(message);
      expect(r.stderr).toContain("--help");
      expect(r.stdout).toBe("");
    }
  });
});

describe("controller CLI without a database", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "rlc-cli-help-"));
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it("--help prints plain-text usage and leaves the data directory empty", async () => {
    for (const args of [["--help"], ["-h"], ["help"], [], ["key", "create", "--help"]]) {
      const r = await exec(args, { APP_DATA_DIR: dir });
      expect(r.code, args.join(" ")).toBe(0);
      expect(r.stdout).toMatch(/^Usage: npm run controller -- <command>/);
      expect(r.stdout).toContain("\n  tenant create NAME");
      expect(r.stdout).toMatch(/Exit codes: 0 done, 1 failed .*, 2 misused/);
      expect(r.stdout).not.toContain("\\n");
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it("misuse is refused before any database is opened", async () => {
    // No DATABASE_URL, and an APP_DATA_DIR that stays empty: a database opened would be created there.
    const r = await exec(["tenant", "create", "NOT A NAME!"], { APP_DATA_DIR: dir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^controller: tenant name NOT A NAME!/);
    expect(await readdir(dir)).toEqual([]);
  });
});
