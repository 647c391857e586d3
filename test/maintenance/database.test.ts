import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, startController } from "../../packages/controller/src/controller.js";
import { mintApiKey } from "../../packages/controller/src/services/access/api-keys.js";
import { embeddedRun, startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
let admin: string;
let operator: string;

beforeAll(async () => {
  t = await startTestController({ env: { GRPC_PORT: "0" } });
  const mint = async (role: string) =>
    (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: role, role } })).json().secret as string;
  admin = await mint("admin");
  operator = await mint("operator");
});
afterAll(async () => t?.close());

describe("database status and analyze (PostgreSQL)", () => {
  it("gives the database size, every table with size, row estimate and dead tuples, and the connections", async () => {
    const res = await t.call(t.rootKey, { method: "GET", url: "/v1/maintenance/db" });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.database).toMatchObject({ name: t.db.name, size_bytes: expect.any(Number) });
    expect(body.database.size_bytes).toBeGreaterThan(1_000_000);
    const names = body.tables.map((x: any) => x.name);
    expect(names).toEqual(expect.arrayContaining(["audit_records", "jobs", "revisions", "maintenance_policies", "schema_migrations"]));
    for (const table of body.tables) {
      expect(table.schema).toBe("public");
      expect(table.size_bytes).toBeGreaterThanOrEqual(0);
      expect(table.row_estimate).toBeGreaterThanOrEqual(0);
    }
    const sizes = body.tables.map((x: any) => x.size_bytes);
    expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
    expect(body.connections.total).toBeGreaterThanOrEqual(1);
    expect(body.connections.active).toBeGreaterThanOrEqual(1); // this very query
    expect(body.connections.max).toBeGreaterThan(0);
  });

  it("ANALYZE answers its time and refreshes the row estimates", async () => {
    const res = await t.call(t.rootKey, { method: "POST", url: "/v1/maintenance/db/analyze" });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ analyzed_at: expect.any(String), duration_ms: expect.any(Number) });
    const tables = (await t.call(t.rootKey, { method: "GET", url: "/v1/maintenance/db" })).json().tables;
    const keys = tables.find((x: any) => x.name === "api_keys");
    expect(keys.row_estimate).toBe(3); // the bootstrap key, admin and operator
    expect(keys.last_analyze_at).not.toBeNull();
  });

  it("runs ANALYZE once a minute for the whole deployment: 429 rate_limited with Retry-After, counted in the database", async () => {
    const again = await t.call(t.rootKey, { method: "POST", url: "/v1/maintenance/db/analyze" });
    expect(again.statusCode, again.body).toBe(429);
    expect(again.headers["content-type"]).toContain("application/problem+json");
    expect(again.json().code).toBe("rate_limited");
    const retryAfter = Number(again.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // The count lives in PostgreSQL, so another replica of the deployment refuses as well.
    const [row] = await t.controller.db.sql<{ hits: Date[] }[]>`SELECT hits FROM rate_limits WHERE bucket = 'db_analyze'`;
    expect(row!.hits).toHaveLength(1);
    if (!embeddedRun) {
      const replica = await startController(loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: "silent", GRPC_PORT: "0" }), { logger: false });
      try {
        const there = await replica.app.inject({ method: "POST", url: "/v1/maintenance/db/analyze", headers: { authorization: `Bearer ${t.rootKey}` } });
        expect(there.statusCode, there.body).toBe(429);
      } finally {
        await replica.close();
      }
    }
    // A minute after the last run, it runs again.
    await t.controller.db.sql`UPDATE rate_limits SET hits = ARRAY[now() - interval '61 seconds'] WHERE bucket = 'db_analyze'`;
    expect((await t.call(t.rootKey, { method: "POST", url: "/v1/maintenance/db/analyze" })).statusCode).toBe(200);
  });

  it("is the deployment's superadmins' only, and refuses a body or query it does not know", async () => {
    const other = (await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "db-other" } })).json();
    const otherRoot = (await mintApiKey(t.controller.db.sql, { tenantId: other.tenant_id, name: "root", role: "superadmin", now: new Date() })).secret;
    for (const key of [operator, admin, other.admin_key.secret, otherRoot]) {
      for (const [method, url] of [
        ["GET", "/v1/maintenance/db"],
        ["POST", "/v1/maintenance/db/analyze"],
      ] as const) {
        const res = await t.call(key, { method, url });
        expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(403);
        expect(res.json().code).toBe("forbidden");
        expect(res.body).not.toContain("api_keys");
      }
    }
    expect((await t.call(null, { method: "GET", url: "/v1/maintenance/db" })).statusCode).toBe(401);
    expect((await t.call(t.rootKey, { method: "POST", url: "/v1/maintenance/db/analyze", payload: { vacuum: true } })).statusCode).toBe(400);
  });

  it("describes every maintenance route in the OpenAPI document", async () => {
    const doc = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    const routes: [string, string][] = [
      ["/v1/maintenance/policies", "get"],
      ["/v1/maintenance/policies", "post"],
      ["/v1/maintenance/policies/{policy_id}", "get"],
      ["/v1/maintenance/policies/{policy_id}", "patch"],
      ["/v1/maintenance/policies/{policy_id}", "delete"],
      ["/v1/maintenance/policies/{policy_id}/run", "post"],
      ["/v1/maintenance/policies/{policy_id}/dry-run", "post"],
      ["/v1/maintenance/db", "get"],
      ["/v1/maintenance/db/analyze", "post"],
    ];
    for (const [path, method] of routes) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(op.summary, `${method} ${path}`).toBeTruthy();
      expect(
        Object.keys(op.responses).some((s) => s.startsWith("4")),
        `${method} ${path}`,
      ).toBe(true);
    }
    expect(doc.components.schemas).toHaveProperty("MaintenancePolicy");
    expect(doc.components.schemas).toHaveProperty("MaintenanceAction");
    expect(doc.components.schemas).toHaveProperty("DatabaseStatus");
  });
});

describe("database status and analyze (embedded database)", () => {
  let dir: string;
  let c: Controller;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "rlc-maint-embedded-"));
    c = await startController(loadConfig({ APP_DATA_DIR: dir, LOG_LEVEL: "silent", GRPC_PORT: "0" }), { logger: false });
  }, 120_000);
  afterAll(async () => {
    await c?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("answers from PGlite too, where the statistics views say little", async () => {
    const auth = { authorization: `Bearer ${c.bootstrap.secret}` };
    const status = await c.app.inject({ method: "GET", url: "/v1/maintenance/db", headers: auth });
    expect(status.statusCode, status.body).toBe(200);
    expect(status.json().database.size_bytes).toBeGreaterThan(0);
    expect(status.json().tables.map((x: any) => x.name)).toContain("maintenance_policies");
    expect(status.json().connections.total).toBeGreaterThanOrEqual(1);
    const analyze = await c.app.inject({ method: "POST", url: "/v1/maintenance/db/analyze", headers: auth });
    expect(analyze.statusCode, analyze.body).toBe(200);
    const after = (await c.app.inject({ method: "GET", url: "/v1/maintenance/db", headers: auth })).json();
    expect(after.tables.find((x: any) => x.name === "api_keys").row_estimate).toBe(1);

    // A policy's dry run and run work on the one-connection embedded pool as well.
    const p = await c.app.inject({
      method: "POST",
      url: "/v1/maintenance/policies",
      headers: auth,
      payload: {
        name: "embedded",
        interval_minutes: 5,
        actions: [{ type: "revision_prune" }, { type: "audit_retention", days: 1 }, { type: "runtime_logs_cleanup" }],
      },
    });
    expect(p.statusCode, p.body).toBe(201);
    const dry = await c.app.inject({ method: "POST", url: `/v1/maintenance/policies/${p.json().policy_id}/dry-run`, headers: auth });
    expect(dry.statusCode, dry.body).toBe(200);
    expect(dry.json().actions[2].would).toMatchObject({ available: false });
    const run = await c.app.inject({ method: "POST", url: `/v1/maintenance/policies/${p.json().policy_id}/run`, headers: auth });
    expect(run.statusCode).toBe(202);
    let job: any;
    for (let i = 0; i < 200; i++) {
      job = (await c.app.inject({ method: "GET", url: `/v1/jobs/${run.json().job_id}`, headers: auth })).json();
      if (job.status === "succeeded" || job.status === "failed") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
  }, 60_000);
});
