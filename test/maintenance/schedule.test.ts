import { createSystemClock } from "@rlc/shared/time";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { insertRevision } from "../../packages/controller/src/db/revisions.js";
import { jobHandler } from "../../packages/controller/src/jobs/handlers.js";
import { startWorker } from "../../packages/controller/src/jobs/worker.js";
import { enqueueJob } from "../../packages/controller/src/services/operations/jobs.js";
import { encodeContent } from "../../packages/controller/src/services/revisions/revision-encoding.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// The api role runs neither a worker nor a scheduler: the test calls the scheduler's passes
// itself with the times it chooses, and starts a worker only when it wants jobs run.
let t: TestController;
let tenantId: string;
const silent = { warn() {}, error() {}, info() {}, debug() {} } as never;
const MINUTE = 60_000;

const sql = () => t.controller.db.sql;
const services = () => t.controller.deps.services;
const bus = () => t.controller.deps.bus;
const jobsOf = (type: string) =>
  sql()<{ id: string; status: string; params: any; created_by: string; result: any; error: any }[]>`
    SELECT id, status, params, created_by, result, error FROM jobs WHERE type = ${type} ORDER BY id`;

/** Runs the queued jobs of `type`; the worker's clock is ahead, as the passes above enqueued "later". */
async function runJobs(handlers: Parameters<typeof startWorker>[0]["handlers"], type: string) {
  const clock = { ...createSystemClock(), now: () => Date.now() + 3 * 60 * MINUTE };
  const w = startWorker({ queue: services().jobs, clock, logger: silent, handlers, pollMs: 50 });
  try {
    for (let i = 0; i < 200; i++) {
      const open = (await jobsOf(type)).filter((j) => j.status === "queued" || j.status === "running");
      if (!open.length) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${type} jobs did not finish`);
  } finally {
    await w.stop();
  }
}

async function addRevision(id: number, createdAt: Date) {
  await insertRevision(sql(), {
    tenant_id: tenantId,
    revision_id: id,
    created_at: createdAt,
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

beforeAll(async () => {
  t = await startTestController({ env: { APP_SERVICE: "api", GRPC_PORT: "0" } });
  expect(t.controller.scheduler).toBeNull();
  tenantId = (await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;
});
afterAll(async () => t?.close());

describe("scheduled maintenance policies", () => {
  it("a due enabled policy gets exactly one run job and its next_run_at moves one interval on", async () => {
    const res = await t.call(t.rootKey, {
      method: "POST",
      url: "/v1/maintenance/policies",
      payload: { name: "every-5", interval_minutes: 5, actions: [{ type: "jobs_retention", days: 7 }] },
    });
    const p = res.json();
    const off = (
      await t.call(t.rootKey, {
        method: "POST",
        url: "/v1/maintenance/policies",
        payload: { name: "off", enabled: false, interval_minutes: 5, actions: [{ type: "revision_prune" }] },
      })
    ).json();
    expect(off.next_run_at).toBeNull();
    const nextRun = new Date(p.next_run_at);

    expect(await services().maintenance.scheduleDueRuns(bus(), new Date(nextRun.getTime() - 1000))).toBe(0);
    const due = new Date(nextRun.getTime() + 1000);
    expect(await services().maintenance.scheduleDueRuns(bus(), due)).toBe(1);
    expect(await services().maintenance.scheduleDueRuns(bus(), due)).toBe(0);
    const jobs = await jobsOf("maintenance_policy_run");
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      status: "queued",
      created_by: "auto:scheduler",
      params: { policy_id: p.policy_id, trigger: "scheduler", requested_by: null },
    });
    const after = (await t.call(t.rootKey, { method: "GET", url: `/v1/maintenance/policies/${p.policy_id}` })).json();
    expect(new Date(after.next_run_at).getTime()).toBe(due.getTime() + 5 * MINUTE);

    // Due again while its run is still queued: no second job, but the schedule moves on.
    const later = new Date(due.getTime() + 6 * MINUTE);
    expect(await services().maintenance.scheduleDueRuns(bus(), later)).toBe(0);
    expect(await jobsOf("maintenance_policy_run")).toHaveLength(1);

    await runJobs([jobHandler({ services: services() }, "maintenance_policy_run")], "maintenance_policy_run");
    const [done] = await jobsOf("maintenance_policy_run");
    expect(done).toMatchObject({ status: "succeeded", result: { policy_id: p.policy_id, trigger: "scheduler" } });
    const run = (await t.call(t.rootKey, { method: "GET", url: "/v1/audit?action=run" })).json().items[0];
    expect(run).toMatchObject({
      policy_id: p.policy_id,
      resource_type: "maintenance_policy",
      actor: { key_id: null, key_prefix: "auto:scheduler", role: null },
    });
  });

  it("a scheduled run of a policy disabled since is skipped; a deleted policy's run fails with not_found, a malformed one at once", async () => {
    const p = (
      await t.call(t.rootKey, {
        method: "POST",
        url: "/v1/maintenance/policies",
        payload: { name: "soon-off", interval_minutes: 5, actions: [{ type: "revision_prune" }] },
      })
    ).json();
    await services().maintenance.scheduleDueRuns(bus(), new Date(Date.now() + 10 * MINUTE));
    await t.call(t.rootKey, { method: "PATCH", url: `/v1/maintenance/policies/${p.policy_id}`, payload: { enabled: false } });
    const gone = (
      await t.call(t.rootKey, {
        method: "POST",
        url: "/v1/maintenance/policies",
        payload: { name: "gone", interval_minutes: 5, actions: [{ type: "revision_prune" }] },
      })
    ).json();
    const asked = (await t.call(t.rootKey, { method: "POST", url: `/v1/maintenance/policies/${gone.policy_id}/run` })).json();
    await t.call(t.rootKey, { method: "DELETE", url: `/v1/maintenance/policies/${gone.policy_id}` });
    const runsBefore = (await t.call(t.rootKey, { method: "GET", url: "/v1/audit?action=run" })).json().items.length;
    const malformed = await sql().begin((tx) =>
      enqueueJob(tx, bus(), { tenantId, type: "maintenance_policy_run", params: { policy_id: 42 }, createdBy: "test", now: new Date(), afterCommit: () => {} }),
    );

    await runJobs([jobHandler({ services: services() }, "maintenance_policy_run")], "maintenance_policy_run");
    const jobs = await jobsOf("maintenance_policy_run");
    expect(jobs.find((j) => j.params.policy_id === p.policy_id)).toMatchObject({ status: "succeeded", result: { skipped: "the policy was disabled" } });
    expect(jobs.find((j) => j.id === asked.job_id)).toMatchObject({ status: "failed", error: { code: "not_found" } });
    expect(jobs.find((j) => j.id === malformed.id)).toMatchObject({ status: "failed", error: { code: "validation_failed" } });
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/audit?action=run" })).json().items).toHaveLength(runsBefore);
  });
});

describe("revision retention", () => {
  it("enqueues a revision_prune job only when the retention is set and a revision is past it, at most every 10 minutes", async () => {
    const now = Date.now();
    await addRevision(1, new Date(now - 3 * 60 * MINUTE));
    await addRevision(2, new Date(now - 2 * 60 * MINUTE));
    await addRevision(3, new Date(now - 90 * MINUTE));
    await addRevision(4, new Date(now - 80 * MINUTE));
    // A speaker still has revision 2 applied: it is kept whatever its age.
    await sql()`
      INSERT INTO speakers (id, tenant_id, name, mode, router_id, asn, applied_revision_id, created_at, updated_at)
      VALUES (${crypto.randomUUID()}, ${tenantId}, 'edge-1', 'remote', '192.0.2.1', 64512, 2, now(), now())`;
    expect(await services().maintenance.scheduleRevisionPrunes(bus(), new Date(now))).toBe(0); // no retention set

    await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { revision_retention_minutes: 600 } });
    expect(await services().maintenance.scheduleRevisionPrunes(bus(), new Date(now))).toBe(0); // nothing past 10 hours

    await t.call(t.rootKey, { method: "PATCH", url: "/v1/settings", payload: { revision_retention_minutes: 60 } });
    expect(await services().maintenance.scheduleRevisionPrunes(bus(), new Date(now + 1 * MINUTE))).toBe(0); // looked 1 minute ago
    expect(await services().maintenance.scheduleRevisionPrunes(bus(), new Date(now + 11 * MINUTE))).toBe(1);
    expect(await services().maintenance.scheduleRevisionPrunes(bus(), new Date(now + 22 * MINUTE))).toBe(0); // one is still queued
    const jobs = await jobsOf("revision_prune");
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ status: "queued", created_by: "auto:scheduler" });
  });

  it("the revision_prune job deletes what is past the retention, never the current revision nor a speaker's, and audits it", async () => {
    await runJobs([jobHandler({ services: services() }, "revision_prune")], "revision_prune");
    const [job] = await jobsOf("revision_prune");
    expect(job).toMatchObject({ status: "succeeded", result: { deleted_count: 2, deleted_revision_ids: [1, 3], kept_count: 2, dry_run: false } });
    const left = (await t.call(t.rootKey, { method: "GET", url: "/v1/revisions" })).json().items;
    expect(left.map((r: any) => [r.revision_id, r.is_current])).toEqual([
      [4, true],
      [2, false],
    ]);
    const rec = (await t.call(t.rootKey, { method: "GET", url: "/v1/audit?action=delete&resource_type=revision" })).json().items[0];
    expect(rec).toMatchObject({
      actor: { key_prefix: "auto:scheduler", key_id: null },
      changes: { revision_ids: { from: [1, 3], to: null } },
      policy_id: null,
    });

    // The current revision is older than the retention too: it stays, and no job is made for it.
    expect(await services().maintenance.scheduleRevisionPrunes(bus(), new Date(Date.now() + 60 * MINUTE))).toBe(0);
    expect(await jobsOf("revision_prune")).toHaveLength(1);
  });
});
