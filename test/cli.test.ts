import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./helpers/db.js";

const run = promisify(execFile);
const cli = join(import.meta.dirname, "../packages/controller/dist/cli.js");
let db: TestDatabase;

async function controller(...args: string[]) {
  try {
    const { stdout } = await run(process.execPath, [cli, ...args], { env: { ...process.env, DATABASE_URL: db.url } });
    return { code: 0, json: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, json: JSON.parse(e.stderr) };
  }
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

    expect((await controller("tenant", "create", "cli-tenant")).code).toBe(1);
    expect((await controller("key", "create", "--tenant", "nope", "--role", "viewer")).code).toBe(2);
    expect((await controller("key", "create", "--tenant", "cli-tenant", "--role", "root")).code).toBe(2);
    expect((await controller("frobnicate")).code).toBe(2);
  });
});
