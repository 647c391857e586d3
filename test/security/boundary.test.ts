import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let dir: string;
let t: TestController;
let operator: string;
let admin: string;
let otherSuperadmin: string;
let otherAdmin: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-boundary-"));
  await writeFile(join(dir, "app.log"), "a line of the service log\n");
  t = await startTestController({ env: { APP_RUNTIME_LOGS_DIR: dir } });
  const mint = async (key: string, role: string) =>
    (await t.call(key, { method: "POST", url: "/v1/api-keys", payload: { name: role, role } })).json().secret as string;
  operator = await mint(t.rootKey, "operator");
  admin = await mint(t.rootKey, "admin");
  otherAdmin = (await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "elsewhere" } })).json().admin_key.secret;
  // A superadmin of another tenant (made directly: keys are never minted above the caller's role).
  const [other] = await t.controller.db.sql<{ id: string }[]>`SELECT id FROM tenants WHERE name = 'elsewhere'`;
  const { mintApiKey } = await import("../../packages/controller/src/services/access/api-keys.js");
  otherSuperadmin = (await mintApiKey(t.controller.db.sql, { tenantId: other!.id, name: "other root", role: "superadmin", now: new Date() })).secret;
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("authentication follows the matched route, not the spelling of the URL", () => {
  const spellings = [
    "/%761/runtime-logs/files",
    "/%761/runtime-logs/files/app.log",
    "/v1/runtime-logs/files/%61pp.log",
    "/%2Fv1/runtime-logs/files",
    "http://x/v1/runtime-logs/files",
    "/v1/runtime-logs/files;x=1",
  ];
  for (const url of spellings) {
    it(`GET ${url} without a key is never 2xx nor 5xx`, async () => {
      const res = await t.call(null, { method: "GET", url });
      expect(res.statusCode, res.body).toBeGreaterThanOrEqual(400);
      expect(res.statusCode, res.body).toBeLessThan(500);
      expect(res.body).not.toContain("a line of the service log");
      expect(res.headers["content-type"]).toContain("application/problem+json");
    });
  }

  it("a protected route spelled another way answers 401, not 500", async () => {
    const res = await t.call(null, { method: "GET", url: "/%761/modules" });
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe("unauthenticated");
  });
});

describe("Idempotency-Key replays only after authorization, per API key", () => {
  it("an operator reusing an admin's key and body gets 403, not the admin's answer; the stored answer holds no secret", async () => {
    const h = { "idempotency-key": "k-admin-key" };
    const payload = { name: "second admin", role: "admin" };
    const first = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload, headers: h });
    expect(first.statusCode).toBe(201);
    const secret = first.json().secret as string;
    const replayedToOperator = await t.call(operator, { method: "POST", url: "/v1/api-keys", payload, headers: h });
    expect(replayedToOperator.statusCode).toBe(403);
    expect(replayedToOperator.headers["idempotent-replayed"]).toBeUndefined();
    expect(replayedToOperator.body).not.toContain(secret);
    const rows = await t.controller.db.sql<{ row: string }[]>`SELECT row_to_json(i)::text AS row FROM idempotency_keys i`;
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r.row).not.toContain(secret.slice(-20));
    // The key that made the answer still gets its replay.
    const again = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload, headers: h });
    expect(again.statusCode).toBe(201);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.json().secret).toBe(secret);
  });
});

describe("a key whose role was lowered", () => {
  it("no longer gets the replay of an answer made under its higher role", async () => {
    const made = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "to lower", role: "admin" } });
    const lowered = made.json().secret as string;
    const h = { "idempotency-key": "k-before-demotion" };
    const payload = { name: "made by an admin", role: "admin" };
    const first = await t.call(lowered, { method: "POST", url: "/v1/api-keys", payload, headers: h });
    expect(first.statusCode, first.body).toBe(201);
    const demoted = await t.call(t.rootKey, { method: "PATCH", url: `/v1/api-keys/${made.json().id}`, payload: { role: "operator" } });
    expect(demoted.statusCode, demoted.body).toBe(200);
    await new Promise((r) => setTimeout(r, 1100)); // the key cache holds a row for one second
    const again = await t.call(lowered, { method: "POST", url: "/v1/api-keys", payload, headers: h });
    expect(again.statusCode).toBe(403);
    expect(again.body).not.toContain(first.json().secret);
  });
});

describe("the deployment's own resources are for keys of tenant default only", () => {
  const runtimeLogCalls: [string, string, unknown?][] = [
    ["GET", "/v1/runtime-logs/files"],
    ["GET", "/v1/runtime-logs/files/app.log"],
    ["DELETE", "/v1/runtime-logs/files/app.log?mode=delete"],
    ["GET", "/v1/runtime-logs/cleanup-audit"],
    ["GET", "/v1/runtime-logs/auto-estimate"],
    ["POST", "/v1/runtime-logs/auto-run"],
    ["PATCH", "/v1/settings", { runtime_logs_auto_enabled: true, runtime_logs_auto_mode: "delete", runtime_logs_auto_threshold_bytes: 1 }],
    [
      "POST",
      "/v1/maintenance/policies",
      { name: "wipe", interval_minutes: 5, actions: [{ type: "runtime_logs_cleanup", mode: "delete", threshold_bytes: 1 }] },
    ],
  ];
  // Whatever the role in tenant default short of superadmin, these stay the deployment's superadmins'.
  const superadminCalls: [string, string, unknown?][] = [
    ["GET", "/v1/bird/status"],
    ["POST", "/v1/bird/reload", {}],
    ["GET", "/v1/maintenance/db"],
    ["POST", "/v1/maintenance/db/analyze"],
    ["GET", "/v1/tenants"],
    ["GET", "/v1/tenants/{default}"],
    ["POST", "/v1/tenants", { name: "made-elsewhere" }],
  ];
  const send = async (key: string, [method, url, payload]: [string, string, unknown?]) => {
    const tenantId = (await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;
    return t.call(key, { method: method as "GET", url: url.replace("{default}", tenantId), ...(payload !== undefined ? { payload: payload as object } : {}) });
  };

  for (const call of [...runtimeLogCalls, ...superadminCalls]) {
    it(`${call[0]} ${call[1]}: 403 for another tenant's superadmin and admin`, async () => {
      for (const key of [otherSuperadmin, otherAdmin]) {
        const res = await send(key, call);
        expect(res.statusCode, `${res.statusCode} ${res.body}`).toBe(403);
        expect(res.json().code).toBe("forbidden");
      }
    });
  }

  for (const call of superadminCalls) {
    it(`${call[0]} ${call[1]}: 403 for tenant default's admin too`, async () => {
      const res = await send(admin, call);
      expect(res.statusCode, `${res.statusCode} ${res.body}`).toBe(403);
      expect(res.json().code).toBe("forbidden");
    });
  }

  it("no tenant was made by the refused calls", async () => {
    const names = (await t.call(t.rootKey, { method: "GET", url: "/v1/tenants" })).json().items.map((x: { name: string }) => x.name);
    expect(names).not.toContain("made-elsewhere");
  });

  it("the files are untouched and still readable by the deployment's superadmin", async () => {
    const list = await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files" });
    expect(list.statusCode).toBe(200);
    expect(list.json().items.map((f: { name: string }) => f.name)).toEqual(["app.log"]);
    const tail = await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files/app.log" });
    expect(tail.json().lines).toEqual(["a line of the service log"]);
    const settings = await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { runtime_logs_auto_threshold_bytes: 5000 } });
    expect(settings.statusCode).toBe(200);
  });

  it("a tenant's other settings stay its admins' and operators'", async () => {
    const res = await t.call(otherAdmin, { method: "PATCH", url: "/v1/settings", payload: { revision_retention_minutes: 120 } });
    expect(res.statusCode, res.body).toBe(200);
  });

  it("the OpenAPI document says who may call them", async () => {
    const doc = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    const op = doc.paths["/v1/runtime-logs/files"].get;
    expect(op["x-deployment"]).toBe(true);
    expect(op["x-min-role"]).toBe("viewer");
    expect(op.description).toContain("tenant `default`");
    expect(doc.paths["/v1/runtime-logs/files/{filename}"].delete).toMatchObject({ "x-deployment": true, "x-min-role": "operator" });
    for (const [path, method] of [
      ["/v1/bird/reload", "post"],
      ["/v1/maintenance/db", "get"],
      ["/v1/tenants", "post"],
    ] as const) {
      expect(doc.paths[path][method], path).toMatchObject({ "x-deployment": true, "x-min-role": "superadmin" });
    }
  });
});
