import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertRevision } from "../../packages/controller/src/db/revisions.js";
import { enqueueJob } from "../../packages/controller/src/services/operations/jobs.js";
import { encodeContent } from "../../packages/controller/src/services/revisions/revision-encoding.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// The api role runs no worker: a job enqueued here stays where the test puts it.
let t: TestController;
let tenantId: string;

beforeAll(async () => {
  t = await startTestController({ env: { APP_SERVICE: "api" } });
  tenantId = (await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;
});
afterAll(async () => {
  await t?.close();
});

describe("request contract", () => {
  it("a body with a Content-Type the route does not take is a 415 unsupported_media_type", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/xml"]) {
      const res = await t.call(t.rootKey, {
        method: "POST",
        url: "/v1/modules",
        headers: { "content-type": type },
        payload: '{"name":"m415","type":"IP_RANGES"}',
      });
      expect(res.statusCode, type).toBe(415);
      expect(res.headers["content-type"]).toContain("application/problem+json");
      expect(res.json()).toMatchObject({ code: "unsupported_media_type", status: 415 });
    }
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/modules" })).json().items).toEqual([]);
    // The JSON types still work.
    const ok = await t.call(t.rootKey, { method: "POST", url: "/v1/modules", payload: { name: "m-json", type: "IP_RANGES" } });
    expect(ok.statusCode).toBe(201);
  });

  it("unknown query parameters are a 400 validation_failed, on routes with and without a query schema", async () => {
    const created = await t.call(t.rootKey, { method: "POST", url: "/v1/modules?dry=true", payload: { name: "not-made", type: "IP_RANGES" } });
    expect(created.statusCode).toBe(400);
    expect(created.json()).toMatchObject({ code: "validation_failed", errors: [{ path: "query.dry" }] });
    const names = (await t.call(t.rootKey, { method: "GET", url: "/v1/modules" })).json().items.map((m: { name: string }) => m.name);
    expect(names).not.toContain("not-made");
    // A GET without a query schema, and one with a (strict) one.
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/settings?verbose=1" })).json()).toMatchObject({ code: "validation_failed" });
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/modules?limit=5&sort=name" })).statusCode).toBe(400);
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/modules?limit=5" })).statusCode).toBe(200);
  });

  it("cancelling a finished job answers 409 whose status is the HTTP status and job_status the job's", async () => {
    const after: (() => void)[] = [];
    const job = await t.controller.db.sql.begin((tx) =>
      enqueueJob(tx, t.controller.deps.bus, {
        tenantId,
        type: "revision_prune",
        params: {},
        createdBy: "test",
        now: new Date(),
        afterCommit: (f) => after.push(f),
      }),
    );
    await t.controller.db.sql`UPDATE jobs SET status = 'succeeded', finished_at = now() WHERE id = ${job.id}`;
    const res = await t.call(t.rootKey, { method: "POST", url: `/v1/jobs/${job.id}/cancel` });
    expect(res.statusCode).toBe(409);
    expect(res.json()).toMatchObject({ status: 409, code: "conflict", job_id: job.id, job_status: "succeeded" });
  });

  it("a prune dry run's deleted_count is the number it would delete", async () => {
    const now = Date.now();
    for (const [id, ageMinutes] of [
      [1, 300],
      [2, 200],
      [3, 10],
    ] as const) {
      await insertRevision(t.controller.db.sql, {
        tenant_id: tenantId,
        revision_id: id,
        created_at: new Date(now - ageMinutes * 60_000),
        created_by: "test",
        reason: "ingest",
        rolled_back_from: null,
        digest: `sha256:${String(id).padStart(64, "0")}`,
        digest_scheme: 2,
        prefix_count_v4: 0,
        prefix_count_v6: 0,
        input_prefix_count: 0,
        dropped_prefix_count: 0,
        modules: [],
        content: encodeContent({ v4: [], v6: [] }),
      });
    }
    await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { revision_retention_minutes: 60 } });
    const dry = await t.call(t.rootKey, { method: "POST", url: "/v1/revisions/prune", payload: { dry_run: true } });
    expect(dry.statusCode, dry.body).toBe(200);
    expect(dry.json()).toMatchObject({ dry_run: true, deleted_revision_ids: [1, 2] });
    expect(dry.json().deleted_count).toBe(2);
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/revisions" })).json().items).toHaveLength(3);
    const real = await t.call(t.rootKey, { method: "POST", url: "/v1/revisions/prune", payload: {} });
    expect(real.json()).toMatchObject({ dry_run: false, deleted_count: 2, deleted_revision_ids: [1, 2] });
  });

  it("the OpenAPI document includes /metrics", async () => {
    const doc = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    expect(doc.paths).toHaveProperty(["/metrics"]);
    expect(doc.paths["/metrics"].get.responses["200"].content).toHaveProperty(["text/plain"]);
    const metrics = await t.call(null, { method: "GET", url: "/metrics" });
    expect(metrics.statusCode).toBe(200);
    expect(metrics.body).toContain("rlc_http_requests_total");
  });
});
