import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { announceBootstrapKey } from "../../packages/controller/src/services/access/bootstrap-notice.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { assertBuilt, ControllerProcess, freePort } from "../process-roles/controller-process.js";

let db: TestDatabase;
let dataDir: string;
let proc: ControllerProcess | undefined;

beforeAll(async () => {
  assertBuilt(["services/access/bootstrap-notice.js"]);
  db = await createTestDatabase();
  dataDir = await mkdtemp(join(tmpdir(), "rlc-bootstrap-"));
});
afterAll(async () => {
  await proc?.stop();
  await db?.drop();
  await rm(dataDir, { recursive: true, force: true });
});

describe("the first superadmin key never lands in a service log", () => {
  it("with stdout not a terminal, the key goes to APP_DATA_DIR/bootstrap-key (0600) and the output names only the file", async () => {
    proc = new ControllerProcess("first-start", await freePort(), { DATABASE_URL: db.url, APP_DATA_DIR: dataDir });
    await proc.waitFor("bootstrap-key", 30_000);
    const file = join(dataDir, "bootstrap-key");
    const key = (await readFile(file, "utf8")).trim();
    expect(key).toMatch(/^rlk_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43,}$/);
    expect(((await stat(file)).mode & 0o777).toString(8)).toBe("600");
    const output = proc.lines.join("\n");
    expect(output).not.toContain(key);
    // The secret is what follows `rlk_<8-character prefix>_`; it may itself hold `_` or `-`.
    expect(output).not.toContain(key.slice("rlk_12345678_".length).slice(0, 16));
    expect(output).toContain(file);
    // The key is announced as soon as it exists, before the listener: wait for that too.
    await proc.ready();
    const session = await proc.call(key, "GET", "/v1/auth/session");
    expect(session.status).toBe(200);
    expect(session.json).toMatchObject({ tenant_name: "default", role: "superadmin" });
  }, 45_000);

  it("on a terminal the key is printed, as `npm start` promises, and no file is written", async () => {
    const dir = await mkdtemp(join(tmpdir(), "rlc-bootstrap-tty-"));
    let out = "";
    const secret = `rlk_ABCDEFGH_${"x".repeat(43)}`;
    const done = await announceBootstrapKey({
      bootstrap: { created: true, tenant_id: "t", secret, key_prefix: "ABCDEFGH" },
      fromEnv: false,
      isTTY: true,
      dataDir: dir,
      shown: "http://127.0.0.1:8080",
      write: (t) => {
        out += t;
      },
    });
    expect(out).toContain(secret);
    expect(done.file).toBeNull();
    await expect(stat(join(dir, "bootstrap-key"))).rejects.toThrow();
    await rm(dir, { recursive: true, force: true });
  });
});
