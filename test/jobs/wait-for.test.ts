import { AppError, NotFoundError } from "@rlc/shared/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishJobFinished } from "../../packages/controller/src/events/publish.js";
import { createJobService, enqueueJob } from "../../packages/controller/src/services/operations/jobs.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// The api role runs no worker: the test ends each job itself, as a worker would (the row, then
// the job_finished event), and watches what a `?wait=true` caller would be answered.
let t: TestController;
let tenantId: string;
const jobs = () => t.controller.deps.services.jobs;

async function enqueue() {
  const row = await t.controller.db.sql.begin((tx) =>
    enqueueJob(tx, t.controller.deps.bus, { tenantId, type: "revision_prune", params: {}, createdBy: "test", now: new Date(), afterCommit: () => {} }),
  );
  return row.id;
}

async function end(id: string, status: "succeeded" | "failed", error: Record<string, unknown> | null = null) {
  const [row] = await t.controller.db.sql<{ id: string; tenant_id: string; type: string; status: string; error: any; finished_at: Date }[]>`
    UPDATE jobs SET status = ${status}, result = ${t.controller.db.sql.json({ pruned: 0 })}, error = ${error === null ? null : t.controller.db.sql.json(error as never)}, finished_at = now()
    WHERE id = ${id} RETURNING id, tenant_id, type, status, error, finished_at`;
  publishJobFinished(t.controller.deps.bus, row!, new Date());
}

beforeAll(async () => {
  t = await startTestController({ env: { APP_SERVICE: "api" } });
  tenantId = (await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;
});
afterAll(async () => {
  await t?.close();
});

describe("the job queue's waitFor", () => {
  it("answers a job still queued when the time is up, as it then is", async () => {
    const id = await enqueue();
    const started = Date.now();
    const job = await jobs().waitFor(tenantId, id, 300);
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(job).toMatchObject({ job_id: id, type: "revision_prune", status: "queued" });
  });

  it("answers the job as soon as it has succeeded, with its result", async () => {
    const id = await enqueue();
    const waiting = jobs().waitFor(tenantId, id, 20_000);
    setTimeout(() => void end(id, "succeeded"), 100);
    const started = Date.now();
    const job = await waiting;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(job).toMatchObject({ job_id: id, status: "succeeded", result: { pruned: 0 } });
  });

  it("throws a failed job's problem, with its code and job_id", async () => {
    const id = await enqueue();
    await end(id, "failed", { code: "revision_guard_tripped", detail: "would withdraw too much" });
    const err = await jobs()
      .waitFor(tenantId, id, 5_000)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ code: "revision_guard_tripped", message: "would withdraw too much", extra: { job_id: id } });
  });

  it("throws a conflict for a cancelled job", async () => {
    const id = await enqueue();
    await t.call(t.rootKey, { method: "POST", url: `/v1/jobs/${id}/cancel` });
    const err = await jobs()
      .waitFor(tenantId, id, 5_000)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "conflict", extra: { job_id: id } });
  });

  it("does not wait on another tenant's job: not found", async () => {
    const id = await enqueue();
    const other = (await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "wait-other" } })).json();
    await expect(jobs().waitFor(other.tenant_id, id, 1_000)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe("the job queue's cap is its own (a constructor argument)", () => {
  it("two queues on one database each refuse API work past their own cap, and other work not at all", async () => {
    const c = t.controller;
    const tenant = (await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "capped-queues" } })).json().tenant_id;
    const one = createJobService({ audit: c.deps.services.audit, bus: c.deps.bus, sql: c.db.sql, tenantMaxQueued: 1 });
    const three = createJobService({ audit: c.deps.services.audit, bus: c.deps.bus, sql: c.db.sql, tenantMaxQueued: 3 });
    const enqueueOn = (queue: typeof one, createdBy: string) =>
      c.db.sql.begin((tx) => queue.enqueue(tx, { tenantId: tenant, type: "revision_prune", params: {}, createdBy, now: new Date(), afterCommit: () => {} }));
    await enqueueOn(one, "key:abc");
    await expect(enqueueOn(one, "key:abc")).rejects.toMatchObject({ code: "too_many_jobs", extra: { queued_jobs: 1, max_queued_jobs: 1 } });
    await enqueueOn(three, "key:abc");
    await enqueueOn(three, "key:abc");
    await expect(enqueueOn(three, "key:abc")).rejects.toMatchObject({ code: "too_many_jobs", extra: { queued_jobs: 3, max_queued_jobs: 3 } });
    // The scheduler's and the jobs' own follow-ups are paced by their schedule, not the cap.
    await enqueueOn(one, "auto:scheduler");
    await c.db.sql`UPDATE jobs SET status = 'cancelled' WHERE tenant_id = ${tenant} AND status = 'queued'`;
  });
});
