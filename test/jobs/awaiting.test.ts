import { eventSubjects } from "@rlc/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAwaitingEvaluator } from "../../packages/controller/src/jobs/awaiting-evaluator.js";
import { createJobHandlers } from "../../packages/controller/src/jobs/handlers.js";
import { startWorker, type Worker } from "../../packages/controller/src/jobs/worker.js";
import { awaitingSweepTask } from "../../packages/controller/src/scheduler/tasks.js";
import { ISSUE_BATCH } from "../../packages/controller/src/services/deploy/deploy.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

// The api role runs neither worker nor scheduler: the test starts one worker with ONE slot (a
// waiting apply that held it would block everything behind it) and the report-driven
// evaluator, and runs the deadline sweep itself, so each way an awaiting job ends is seen alone.
let t: TestController;
let worker: Worker | undefined;
let evaluator: { stop(): Promise<void> } | undefined;
const silent = { warn() {}, error() {}, info() {}, debug() {} } as never;
const call = (key: string, method: string, url: string, payload?: unknown) =>
  t.call(key, { method: method as never, url, ...(payload === undefined ? {} : { payload: payload as never }) });
const sql = () => t.controller.db.sql;

const jobOf = async (id: string) => (await call(t.rootKey, "GET", `/v1/jobs/${id}`)).json();
const statusIs = (id: string, ...statuses: string[]) =>
  until(`job ${id} to be ${statuses.join("/")}`, async () => {
    const j = await jobOf(id);
    return statuses.includes(j.status) ? j : null;
  });

let revisionId: number;

async function speaker(name: string, enroll: boolean) {
  const created = (await call(t.rootKey, "POST", "/v1/speakers", { name, router_id: "192.0.2.9", asn: 65020 })).json();
  if (!enroll) return { id: created.speaker_id as string, key: "" };
  const enrolled = (await call(created.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: `${name}.example`, agent_version: "1.0.0" })).json();
  return { id: created.speaker_id as string, key: enrolled.api_key as string };
}
const apply = async (speakerIds: string[], timeout = 600) => {
  const res = await call(t.rootKey, "POST", "/v1/apply", { speaker_ids: speakerIds, timeout_seconds: timeout });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().job_id as string;
};
const bundleOf = async (s: { id: string; key: string }) => (await call(s.key, "GET", `/v1/speakers/${s.id}/revisions/latest`)).json();
const report = (s: { id: string; key: string }, body: Record<string, unknown>) =>
  call(s.key, "POST", `/v1/speakers/${s.id}/status`, { speaker_id: s.id, sessions: [], error: null, agent_version: "1.0.0", ...body });

beforeAll(async () => {
  t = await startTestController({ env: { APP_SERVICE: "api" } });
  const c = t.controller;
  worker = startWorker({
    queue: c.deps.services.jobs,
    clock: c.deps.clock,
    logger: silent,
    handlers: createJobHandlers({ services: c.deps.services }),
    concurrency: 1,
    quickSlots: 0,
    pollMs: 50,
  });
  evaluator = startAwaitingEvaluator({ bus: c.deps.bus, clock: c.deps.clock, logger: silent, deploy: c.deps.services.deploy });
  const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "await", type: "IP_RANGES" })).json();
  await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.9.0.0/16" });
  const refreshed = await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
  expect(refreshed.statusCode, refreshed.body).toBe(200);
  revisionId = refreshed.json().result.revision_id;
}, 60_000);
afterAll(async () => {
  await worker?.stop();
  await evaluator?.stop();
  await t?.close();
});

describe("awaiting jobs", () => {
  it("an apply to speakers without an agent waits as `awaiting`, holding no worker slot: other jobs run meanwhile", async () => {
    const s = await Promise.all([speaker("no-agent-1", false), speaker("no-agent-2", false)]);
    const waiting = [await apply([s[0]!.id]), await apply([s[1]!.id]), await apply([s[0]!.id, s[1]!.id])];
    for (const id of waiting) {
      const j = await statusIs(id, "awaiting");
      expect(j).toMatchObject({ progress: { done: 0, total: expect.any(Number) }, finished_at: null });
    }
    // The one slot is free: a refresh runs to the end while the three applies wait.
    const started = Date.now();
    const mod = (await call(t.rootKey, "GET", "/v1/modules")).json().items[0];
    const refreshed = await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(Date.now() - started).toBeLessThan(5000);
    for (const id of waiting) expect((await jobOf(id)).status).toBe("awaiting");

    // cancel works on an awaiting job: at once, with what is known so far.
    const cancelled = await call(t.rootKey, "POST", `/v1/jobs/${waiting[2]}/cancel`);
    expect(cancelled.statusCode, cancelled.body).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: "cancelled", cancel_requested: true, result: { revision_id: revisionId, issued: expect.any(Array) } });
    expect(cancelled.json().finished_at).not.toBeNull();
    expect((await call(t.rootKey, "POST", `/v1/jobs/${waiting[2]}/cancel`)).statusCode).toBe(409);
    await sql()`UPDATE jobs SET status = 'cancelled' WHERE id IN ${sql()(waiting.slice(0, 2))}`;
  });

  it("an agent's report ends the awaiting apply at once (no sweep runs here), with its per-speaker outcome", async () => {
    const edge = await speaker("edge-report", true);
    const quiet = await speaker("edge-quiet", false);
    const id = await apply([edge.id, quiet.id]);
    await statusIs(id, "awaiting");
    const latest = await bundleOf(edge);
    const reported = Date.now();
    expect(
      (await report(edge, { reason: "applied", applied_revision_id: revisionId, applied_sequence: latest.sequence, applied_digest: latest.digest })).statusCode,
    ).toBe(204);
    // One of two answered: progress moves, the job waits on.
    const half = await until(
      "progress 1/2",
      async () => {
        const j = await jobOf(id);
        return j.progress?.done === 1 ? j : null;
      },
      3000,
    );
    expect(Date.now() - reported).toBeLessThan(2000);
    expect(half).toMatchObject({ status: "awaiting", progress: { done: 1, total: 2 } });

    // The other one's apply fails (as a report over gRPC would record it): the job ends failed with each speaker's outcome.
    const tenantId = (await call(t.rootKey, "GET", "/v1/auth/session")).json().tenant_id;
    await sql()`UPDATE speakers SET dispatch_status = 'failed', last_error = ${sql().json({ code: "bird_config_invalid", message: "syntax error", revision_id: revisionId })} WHERE id = ${quiet.id}`;
    t.controller.deps.bus.publish(eventSubjects.status(tenantId, quiet.id), {});
    const failed = await statusIs(id, "failed");
    expect(failed.error).toMatchObject({ code: "apply_failed", status: 502 });
    expect(failed.result.speakers).toEqual([
      { speaker_id: edge.id, status: "applied", error: null },
      { speaker_id: quiet.id, status: "failed", error: expect.objectContaining({ code: "bird_config_invalid" }) },
    ]);
  });

  it("the deadline sweep ends what no report ends: pending speakers time out", async () => {
    const s = await speaker("never-answers", false);
    const id = await apply([s.id], 1);
    await statusIs(id, "awaiting");
    const sweep = awaitingSweepTask(t.controller.deps.services.deploy, t.controller.deps.clock);
    await sweep.run(new Date());
    expect((await jobOf(id)).status).toBe("awaiting"); // not due yet
    await new Promise((r) => setTimeout(r, 1100));
    await sweep.run(new Date());
    const j = await jobOf(id);
    expect(j).toMatchObject({ status: "failed", error: { code: "apply_failed" }, progress: { done: 1, total: 1 } });
    expect(j.result.speakers).toEqual([{ speaker_id: s.id, status: "timeout", error: expect.objectContaining({ code: "timeout" }) }]);
    expect((await call(t.rootKey, "GET", `/v1/speakers/${s.id}`)).json().dispatch_status).toBe("failed");
  });

  it("a failed fetch (the controller too busy to serve it) is no outcome before the deadline: the agent's retry applies and the job counts it applied", async () => {
    const edge = await speaker("edge-busy", true);
    const id = await apply([edge.id]);
    await statusIs(id, "awaiting");
    const latest = await bundleOf(edge);
    const fetchFailed = {
      code: "fetch_failed",
      message: "too_large: GetBundle: the controller serves too many bundles right now; try again later",
      revision_id: revisionId,
      sequence: null,
      at: new Date().toISOString(),
    };
    expect((await report(edge, { reason: "apply_failed", error: fetchFailed })).statusCode).toBe(204);
    await t.controller.deps.services.deploy.evaluateAwaiting(() => new Date());
    expect(await jobOf(id)).toMatchObject({ status: "awaiting", progress: { done: 0, total: 1 } });

    await report(edge, { reason: "applied", applied_revision_id: revisionId, applied_sequence: latest.sequence, applied_digest: latest.digest });
    const done = await statusIs(id, "succeeded");
    expect(done.result.speakers).toEqual([{ speaker_id: edge.id, status: "applied", error: null }]);
  });

  it("a fetch still failing at the deadline is the speaker's failure, with the agent's error", async () => {
    const edge = await speaker("edge-unreachable", true);
    const id = await apply([edge.id], 1);
    await statusIs(id, "awaiting");
    const error = {
      code: "fetch_failed",
      message: "controller_unreachable: fetch failed",
      revision_id: revisionId,
      sequence: null,
      at: new Date().toISOString(),
    };
    expect((await report(edge, { reason: "apply_failed", error })).statusCode).toBe(204);
    await new Promise((r) => setTimeout(r, 1100));
    await awaitingSweepTask(t.controller.deps.services.deploy, t.controller.deps.clock).run(new Date());
    const j = await statusIs(id, "failed");
    expect(j.result.speakers).toEqual([{ speaker_id: edge.id, status: "failed", error: expect.objectContaining({ code: "fetch_failed" }) }]);
  });

  it("an apply to more speakers than one issuing transaction holds gives every one its own signed bundle", async () => {
    const many = [];
    for (let i = 0; i <= ISSUE_BATCH; i++) many.push(await speaker(`batch-${i}`, false));
    const ids = many.map((s) => s.id);
    const id = await apply(ids);
    expect(await statusIs(id, "awaiting")).toMatchObject({ progress: { done: 0, total: ids.length } });
    const rows = await sql()<{ n: number; digests: number; dispatched: number }[]>`
      SELECT count(*)::int AS n, count(DISTINCT b.digest)::int AS digests, count(*) FILTER (WHERE s.dispatch_status = 'dispatched')::int AS dispatched
      FROM speakers s JOIN bundles b ON b.speaker_id = s.id AND b.revision_id = s.desired_revision_id AND b.sequence = s.bundle_sequence
      WHERE s.id = ANY(${ids}::uuid[]) AND s.desired_revision_id = ${revisionId}`;
    expect(rows[0]).toEqual({ n: ids.length, digests: ids.length, dispatched: ids.length });
    await sql()`UPDATE jobs SET status = 'cancelled' WHERE id = ${id}`;
  });

  it("evaluations racing on several replicas end a job once", async () => {
    const edge = await speaker("edge-race", true);
    const id = await apply([edge.id]);
    await statusIs(id, "awaiting");
    const latest = await bundleOf(edge);
    await evaluator?.stop(); // only the racing evaluations below end it
    evaluator = undefined;
    await report(edge, { reason: "applied", applied_revision_id: revisionId, applied_sequence: latest.sequence, applied_digest: latest.digest });
    const ends = await Promise.all(Array.from({ length: 6 }, () => t.controller.deps.services.deploy.evaluateAwaiting(() => new Date())));
    expect(ends.reduce((a, b) => a + b, 0)).toBe(1);
    expect(await jobOf(id)).toMatchObject({ status: "succeeded", result: { speakers: [{ speaker_id: edge.id, status: "applied" }] } });
  });
});
