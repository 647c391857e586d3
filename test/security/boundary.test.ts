import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let dir: string;
let t: TestController;
let operator: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-boundary-"));
  await writeFile(join(dir, "app.log"), "a line of the service log\n");
  t = await startTestController({ env: { APP_RUNTIME_LOGS_DIR: dir } });
  operator = (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "op", role: "operator" } })).json().secret;
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
