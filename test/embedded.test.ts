import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../packages/controller/src/config.js";
import { type Controller, startController } from "../packages/controller/src/controller.js";

// The newcomer's path: no DATABASE_URL, so the controller runs on the embedded PostgreSQL
// (PGlite over pglite-socket) with the same driver, SQL and migrations.
let dir: string;
let c: Controller;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-embedded-"));
  c = await startController(loadConfig({ APP_DATA_DIR: dir, LOG_LEVEL: "silent" }), { logger: false });
}, 120_000);
afterAll(async () => {
  await c?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("embedded database", () => {
  it("bootstraps tenant default, serves the session and takes writes with their audit", async () => {
    expect(c.db.kind).toBe("embedded");
    expect(c.bootstrap.created).toBe(true);
    const key = c.bootstrap.secret!;
    const auth = { authorization: `Bearer ${key}` };
    expect((await c.app.inject({ method: "GET", url: "/v1/health" })).statusCode).toBe(200);
    const session = await c.app.inject({ method: "GET", url: "/v1/auth/session", headers: auth });
    expect(session.json()).toMatchObject({ tenant_name: "default", role: "superadmin" });
    const created = await c.app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...auth, "idempotency-key": "e1" },
      payload: { name: "ops", role: "operator" },
    });
    expect(created.statusCode).toBe(201);
    const replay = await c.app.inject({
      method: "POST",
      url: "/v1/api-keys",
      headers: { ...auth, "idempotency-key": "e1" },
      payload: { name: "ops", role: "operator" },
    });
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    const audit = await c.app.inject({ method: "GET", url: "/v1/audit", headers: auth });
    expect(audit.json().items).toHaveLength(1);
    expect((await c.app.inject({ method: "GET", url: "/v1/ready" })).json().checks.database).toBe("ok");
  });

  it("keeps its data across a restart and bootstraps only once", async () => {
    const key = c.bootstrap.secret!;
    await c.close();
    c = await startController(loadConfig({ APP_DATA_DIR: dir, LOG_LEVEL: "silent" }), { logger: false });
    expect(c.bootstrap.created).toBe(false);
    const session = await c.app.inject({ method: "GET", url: "/v1/auth/session", headers: { authorization: `Bearer ${key}` } });
    expect(session.statusCode).toBe(200);
  }, 120_000);
});
