import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
let dir: string;
let key: string;
let viewer: string;
let otherTenantKey: string;

const call = (k: string, o: InjectOptions) => t.call(k, o);
const post = async (url: string, payload?: object, k = key) => {
  const res = await call(k, { method: "POST", url, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res;
};
const count = async (table: "maintenance_policies" | "audit_records" | "jobs" | "revisions") =>
  (await t.controller.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM ${t.controller.db.sql(table)}`)[0]!.n;

async function waitForJob(jobId: string) {
  for (let i = 0; i < 200; i++) {
    const job = (await call(key, { method: "GET", url: `/v1/jobs/${jobId}` })).json();
    if (job.status !== "queued" && job.status !== "running") return job;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`job ${jobId} did not finish`);
}

/** Adds an entry and refreshes: one new revision each time. */
async function makeRevision(moduleId: string, cidr: string) {
  await post(`/v1/modules/${moduleId}/ip-range-entries`, { cidr });
  const res = await post(`/v1/modules/${moduleId}/refresh?wait=true`);
  return res.json().result.revision_id as number;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-maint-"));
  t = await startTestController({ env: { APP_RUNTIME_LOGS_DIR: dir, GRPC_PORT: "0" } });
  key = t.rootKey;
  viewer = (await post("/v1/api-keys", { name: "v", role: "viewer" })).json().secret;
  otherTenantKey = (await post("/v1/tenants", { name: "maint-other" })).json().admin_key.secret;
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("maintenance policies - CRUD", () => {
  let id: string;

  it("creates, reads, lists, updates and deletes a policy, each with its audit record", async () => {
    const created = await call(key, {
      method: "POST",
      url: "/v1/maintenance/policies",
      payload: { name: "nightly", interval_minutes: 1440, actions: [{ type: "revision_prune" }, { type: "jobs_retention", days: 30 }] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const policy = created.json();
    id = policy.policy_id;
    expect(created.headers.location).toBe(`/v1/maintenance/policies/${id}`);
    expect(policy).toMatchObject({ name: "nightly", enabled: true, interval_minutes: 1440, last_run_at: null });
    expect(new Date(policy.next_run_at).getTime() - new Date(policy.created_at).getTime()).toBe(1440 * 60_000);

    expect((await call(key, { method: "GET", url: `/v1/maintenance/policies/${id}` })).json()).toEqual(policy);
    const list = (await call(key, { method: "GET", url: "/v1/maintenance/policies?enabled=true" })).json();
    expect(list).toMatchObject({ items: [policy], has_more: false, next_cursor: null });
    expect((await call(key, { method: "GET", url: "/v1/maintenance/policies?enabled=false" })).json().items).toEqual([]);

    const disabled = (await call(key, { method: "PATCH", url: `/v1/maintenance/policies/${id}`, payload: { enabled: false } })).json();
    expect(disabled).toMatchObject({ enabled: false, next_run_at: null });
    const enabled = await call(key, { method: "PATCH", url: `/v1/maintenance/policies/${id}`, payload: { enabled: true, interval_minutes: 60 } });
    expect(enabled.json()).toMatchObject({ enabled: true, interval_minutes: 60 });
    expect(new Date(enabled.json().next_run_at).getTime()).toBeGreaterThan(Date.now() + 59 * 60_000);

    const audit = (await call(key, { method: "GET", url: "/v1/audit?resource_type=maintenance_policy" })).json().items;
    expect(audit.map((r: any) => r.action)).toEqual(["update", "update", "create"]);
    expect(audit.every((r: any) => r.policy_id === id && r.resource_id === id)).toBe(true);
    expect(audit[0].changes).toEqual({ enabled: { from: false, to: true }, interval_minutes: { from: 1440, to: 60 } });
  });

  it("pages through policies with a cursor", async () => {
    for (const name of ["p-a", "p-b"]) await post("/v1/maintenance/policies", { name, interval_minutes: 5, actions: [{ type: "revision_prune" }] });
    const first = (await call(key, { method: "GET", url: "/v1/maintenance/policies?limit=2" })).json();
    expect(first.items.map((p: any) => p.name)).toEqual(["p-b", "p-a"]);
    expect(first.has_more).toBe(true);
    const second = (await call(key, { method: "GET", url: `/v1/maintenance/policies?limit=2&cursor=${first.next_cursor}` })).json();
    expect(second.items.map((p: any) => p.name)).toEqual(["nightly"]);
    expect(second.has_more).toBe(false);
  });

  it("a PATCH that changes nothing writes no audit record; a delete answers 204 and then 404", async () => {
    const before = await count("audit_records");
    expect((await call(key, { method: "PATCH", url: `/v1/maintenance/policies/${id}`, payload: {} })).statusCode).toBe(200);
    expect(await count("audit_records")).toBe(before);
    const doomed = (await post("/v1/maintenance/policies", { name: "doomed", interval_minutes: 5, actions: [{ type: "revision_prune" }] })).json();
    expect((await call(key, { method: "DELETE", url: `/v1/maintenance/policies/${doomed.policy_id}` })).statusCode).toBe(204);
    expect((await call(key, { method: "GET", url: `/v1/maintenance/policies/${doomed.policy_id}` })).statusCode).toBe(404);
    const rec = (await call(key, { method: "GET", url: "/v1/audit?action=delete&resource_type=maintenance_policy" })).json().items[0];
    expect(rec).toMatchObject({ resource_id: doomed.policy_id, policy_id: doomed.policy_id, severity: "warning" });
  });

  it("replays a create sent twice with one Idempotency-Key: one policy", async () => {
    const opts = {
      method: "POST" as const,
      url: "/v1/maintenance/policies",
      headers: { "idempotency-key": "maint-create-1" },
      payload: { name: "once", interval_minutes: 5, actions: [{ type: "audit_retention", days: 90 }] },
    };
    const a = await call(key, opts);
    const b = await call(key, opts);
    expect(a.statusCode).toBe(201);
    expect(b.headers["idempotent-replayed"]).toBe("true");
    expect(b.json().policy_id).toBe(a.json().policy_id);
    expect((await t.controller.db.sql`SELECT 1 FROM maintenance_policies WHERE name = 'once'`).length).toBe(1);
  });
});

describe("maintenance policies - errors", () => {
  const valid = { name: "valid", interval_minutes: 5, actions: [{ type: "revision_prune" }] };

  it("refuses bad bodies with 400 and changes nothing", async () => {
    const policies = await count("maintenance_policies");
    const audit = await count("audit_records");
    const bad: unknown[] = [
      { ...valid, extra: 1 },
      { ...valid, name: "" },
      { ...valid, name: "x".repeat(129) },
      { ...valid, name: "nul\u0000byte" },
      { ...valid, name: "tab\there" },
      { ...valid, name: "   " },
      { ...valid, interval_minutes: 4 },
      { ...valid, interval_minutes: 43201 },
      { ...valid, interval_minutes: 5.5 },
      { ...valid, interval_minutes: "5" },
      { ...valid, actions: [] },
      { ...valid, actions: [{ type: "vacuum_everything" }] },
      { ...valid, actions: [{ type: "revision_prune" }, { type: "revision_prune" }] },
      { ...valid, actions: [{ type: "audit_retention" }] },
      { ...valid, actions: [{ type: "audit_retention", days: 0 }] },
      { ...valid, actions: [{ type: "jobs_retention", days: 30, extra: true }] },
      { ...valid, actions: [{ type: "runtime_logs_cleanup", threshold_bytes: -1 }] },
      { ...valid, actions: [{ type: "runtime_logs_cleanup", mode: "shred" }] },
      { ...valid, actions: "revision_prune" },
      { name: "only-a-name" },
      [],
      null,
    ];
    for (const payload of bad) {
      const res = await call(key, { method: "POST", url: "/v1/maintenance/policies", payload: payload as object });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe("validation_failed");
    }
    const broken = await call(key, { method: "POST", url: "/v1/maintenance/policies", headers: { "content-type": "application/json" }, payload: "{" });
    expect(broken.json().code).toBe("invalid_json");
    expect(await count("maintenance_policies")).toBe(policies);
    expect(await count("audit_records")).toBe(audit);
  });

  it("refuses a taken name with 409, on create and on rename, leaving both policies as they were", async () => {
    const a = (await post("/v1/maintenance/policies", { ...valid, name: "taken-a" })).json();
    await post("/v1/maintenance/policies", { ...valid, name: "taken-b" });
    const dup = await call(key, { method: "POST", url: "/v1/maintenance/policies", payload: { ...valid, name: "taken-a" } });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().code).toBe("conflict");
    const rename = await call(key, { method: "PATCH", url: `/v1/maintenance/policies/${a.policy_id}`, payload: { name: "taken-b", interval_minutes: 10 } });
    expect(rename.statusCode).toBe(409);
    expect((await call(key, { method: "GET", url: `/v1/maintenance/policies/${a.policy_id}` })).json()).toEqual(a);
  });

  it("answers 400 for a bad id, limit or cursor", async () => {
    for (const url of [
      "/v1/maintenance/policies/not-a-uuid",
      "/v1/maintenance/policies?limit=0",
      "/v1/maintenance/policies?limit=501",
      "/v1/maintenance/policies?enabled=yes",
      "/v1/maintenance/policies?color=red",
      "/v1/maintenance/policies?cursor=%%%",
      `/v1/maintenance/policies?cursor=${Buffer.from(JSON.stringify(["not-a-uuid"])).toString("base64url")}`,
    ]) {
      const res = await call(key, { method: "GET", url });
      expect(res.statusCode, url).toBe(400);
      expect(["validation_failed", "invalid_cursor"], url).toContain(res.json().code);
    }
    expect((await call(key, { method: "POST", url: "/v1/maintenance/policies/not-a-uuid/run" })).statusCode).toBe(400);
    expect((await call(key, { method: "POST", url: `/v1/maintenance/policies/${crypto.randomUUID()}/run`, payload: { now: true } })).statusCode).toBe(400);
  });

  it("a viewer gets 403; another tenant's policy is a 404 for every route", async () => {
    const p = (await post("/v1/maintenance/policies", { ...valid, name: "mine" })).json();
    expect((await call(viewer, { method: "GET", url: "/v1/maintenance/policies" })).statusCode).toBe(403);
    expect((await call(viewer, { method: "POST", url: "/v1/maintenance/policies", payload: { ...valid, name: "v" } })).statusCode).toBe(403);
    expect((await call(viewer, { method: "POST", url: `/v1/maintenance/policies/${p.policy_id}/run` })).statusCode).toBe(403);
    const routes: InjectOptions[] = [
      { method: "GET", url: `/v1/maintenance/policies/${p.policy_id}` },
      { method: "PATCH", url: `/v1/maintenance/policies/${p.policy_id}`, payload: { enabled: false } },
      { method: "DELETE", url: `/v1/maintenance/policies/${p.policy_id}` },
      { method: "POST", url: `/v1/maintenance/policies/${p.policy_id}/run` },
      { method: "POST", url: `/v1/maintenance/policies/${p.policy_id}/dry-run` },
    ];
    for (const r of routes) expect((await call(otherTenantKey, r)).statusCode, `${r.method} ${r.url}`).toBe(404);
    expect((await call(otherTenantKey, { method: "GET", url: "/v1/maintenance/policies" })).json().items).toEqual([]);
    expect((await call(key, { method: "GET", url: `/v1/maintenance/policies/${p.policy_id}` })).json()).toEqual(p);
  });
});

describe("maintenance policies - an audit trail kept short is an admin's call", () => {
  const short = { name: "forget", interval_minutes: 60, actions: [{ type: "audit_retention", days: 7 }] };
  let operator: string;
  let admin: string;

  beforeAll(async () => {
    operator = (await post("/v1/api-keys", { name: "op", role: "operator" })).json().secret;
    admin = (await post("/v1/api-keys", { name: "ad", role: "admin" })).json().secret;
  });

  it("an operator gets 403 for an audit_retention below 30 days, on create and on update, and nothing changes", async () => {
    const before = await count("maintenance_policies");
    const created = await call(operator, { method: "POST", url: "/v1/maintenance/policies", payload: short });
    expect(created.statusCode, created.body).toBe(403);
    expect(created.json()).toMatchObject({ code: "forbidden", detail: expect.stringContaining("30 days") });
    const kept = await call(operator, {
      method: "POST",
      url: "/v1/maintenance/policies",
      payload: { ...short, name: "month", actions: [{ type: "audit_retention", days: 30 }] },
    });
    expect(kept.statusCode, kept.body).toBe(201);
    const shortened = await call(operator, {
      method: "PATCH",
      url: `/v1/maintenance/policies/${kept.json().policy_id}`,
      payload: { actions: [{ type: "audit_retention", days: 1 }] },
    });
    expect(shortened.statusCode, shortened.body).toBe(403);
    expect(await count("maintenance_policies")).toBe(before + 1);
    expect((await call(operator, { method: "GET", url: `/v1/maintenance/policies/${kept.json().policy_id}` })).json().actions).toEqual([
      { type: "audit_retention", days: 30 },
    ]);
  });

  it("an admin may keep the audit trail for fewer days", async () => {
    const res = await call(admin, { method: "POST", url: "/v1/maintenance/policies", payload: short });
    expect(res.statusCode, res.body).toBe(201);
    const doc = (await call(admin, { method: "GET", url: "/v1/openapi.json" })).json();
    expect(doc.paths["/v1/maintenance/policies"].post.description).toContain("fewer than 30 days needs the admin role");
  });
});

describe("maintenance policies - run and dry run", () => {
  let moduleId: string;
  let revisions: number[];

  beforeAll(async () => {
    moduleId = (await post("/v1/modules", { name: "maint-ranges", type: "IP_RANGES" })).json().id;
    revisions = [];
    for (const cidr of ["11.1.0.0/16", "11.2.0.0/16", "11.3.0.0/16"]) revisions.push(await makeRevision(moduleId, cidr));
    // Revisions 1 and 2 are two days old; the third (current) too, but it is never pruned.
    await t.controller.db.sql`UPDATE revisions SET created_at = created_at - interval '2 days'`;
    await call(key, { method: "PATCH", url: "/v1/settings", payload: { revision_retention_minutes: 60 } });
    // Old audit records and old finished jobs for the retention actions.
    await t.controller.db.sql`UPDATE audit_records SET at = at - interval '40 days' WHERE resource_type = 'ip_range_entry'`;
    await t.controller.db.sql`UPDATE jobs SET finished_at = finished_at - interval '40 days' WHERE type = 'module_ingest'`;
  });

  it("dry-run says what each action would delete, at once, and deletes nothing", async () => {
    await writeFile(join(dir, "big.log"), "x".repeat(5000));
    await writeFile(join(dir, "small.log"), "y");
    const p = (
      await post("/v1/maintenance/policies", {
        name: "everything",
        interval_minutes: 60,
        actions: [
          { type: "revision_prune" },
          { type: "runtime_logs_cleanup", threshold_bytes: 100, mode: "truncate" },
          { type: "audit_retention", days: 30 },
          { type: "jobs_retention", days: 30 },
        ],
      })
    ).json();
    const before = { revisions: await count("revisions"), audit: await count("audit_records"), jobs: await count("jobs") };
    const res = await call(key, { method: "POST", url: `/v1/maintenance/policies/${p.policy_id}/dry-run` });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body.policy_id).toBe(p.policy_id);
    expect(body.actions.map((a: any) => a.type)).toEqual(["revision_prune", "runtime_logs_cleanup", "audit_retention", "jobs_retention"]);
    const [prune, logs, audit, jobs] = body.actions.map((a: any) => a.would);
    expect(prune).toMatchObject({ count: 2, revision_ids: revisions.slice(0, 2), retention_minutes: 60 });
    expect(logs).toMatchObject({ available: true, count: 1, bytes: 5000, files: [expect.objectContaining({ name: "big.log", result: "dry_run" })] });
    expect(audit).toMatchObject({ count: 3, truncated: false });
    expect(audit.ids).toHaveLength(3);
    expect(jobs).toMatchObject({ count: 3, truncated: false });
    expect((await stat(join(dir, "big.log"))).size).toBe(5000);
    expect({ revisions: await count("revisions"), audit: await count("audit_records"), jobs: await count("jobs") }).toEqual(before);
    const cleanup = (await call(key, { method: "GET", url: "/v1/runtime-logs/cleanup-audit" })).json().items[0];
    expect(cleanup).toMatchObject({ filename: "big.log", dry_run: true, actor: `policy:${p.policy_id}`, actor_prefix: "auto:api" });
  });

  it("run enqueues a maintenance_policy_run job that deletes, records the run and each deletion with the policy_id", async () => {
    const p = (await call(key, { method: "GET", url: "/v1/maintenance/policies?limit=1" })).json().items[0];
    expect(p.name).toBe("everything");
    // A record still waiting in the push outbox is never deleted by the retention.
    const [pending] = await t.controller.db.sql<{ id: string }[]>`SELECT id FROM audit_records WHERE at < now() - interval '30 days' LIMIT 1`;
    await t.controller.db.sql`INSERT INTO audit_outbox (record_id, next_attempt_at) VALUES (${pending!.id}, now() + interval '1 day')`;

    const accepted = await call(key, { method: "POST", url: `/v1/maintenance/policies/${p.policy_id}/run`, headers: { "idempotency-key": "run-1" } });
    expect(accepted.statusCode, accepted.body).toBe(202);
    expect(accepted.json()).toMatchObject({ type: "maintenance_policy_run", status: "queued" });
    expect(accepted.headers.location).toBe(`/v1/jobs/${accepted.json().job_id}`);
    const replay = await call(key, { method: "POST", url: `/v1/maintenance/policies/${p.policy_id}/run`, headers: { "idempotency-key": "run-1" } });
    expect(replay.json().job_id).toBe(accepted.json().job_id);

    const job = await waitForJob(accepted.json().job_id);
    expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
    expect(job.result.actions.map((a: any) => [a.type, a.done.count])).toEqual([
      ["revision_prune", 2],
      ["runtime_logs_cleanup", 1],
      ["audit_retention", 2],
      ["jobs_retention", 3],
    ]);
    expect(job.params).toMatchObject({ policy_id: p.policy_id, trigger: "api" });

    const left = (await call(key, { method: "GET", url: "/v1/revisions" })).json().items;
    expect(left.map((r: any) => [r.revision_id, r.is_current])).toEqual([[revisions[2], true]]);
    expect((await stat(join(dir, "big.log"))).size).toBe(0);
    expect((await stat(join(dir, "small.log"))).size).toBe(1);
    expect((await t.controller.db.sql`SELECT 1 FROM audit_records WHERE id = ${pending!.id}`).length).toBe(1);
    expect((await t.controller.db.sql`SELECT 1 FROM jobs WHERE type = 'module_ingest'`).length).toBe(0);
    const lastRun = (await call(key, { method: "GET", url: `/v1/maintenance/policies/${p.policy_id}` })).json().last_run_at;
    expect(new Date(lastRun).getTime()).toBeLessThanOrEqual(new Date(job.finished_at).getTime());
    expect(new Date(lastRun).getTime()).toBeGreaterThanOrEqual(new Date(job.started_at).getTime());

    const audit = (await call(key, { method: "GET", url: "/v1/audit?limit=20" })).json().items;
    const run = audit.find((r: any) => r.action === "run");
    expect(run).toMatchObject({
      resource_type: "maintenance_policy",
      resource_id: p.policy_id,
      policy_id: p.policy_id,
      actor: { key_prefix: key.split("_")[1] },
    });
    const byPolicy = audit.filter((r: any) => r.policy_id === p.policy_id && r.action === "delete").map((r: any) => r.resource_type);
    expect(byPolicy.sort()).toEqual(["job", "maintenance_policy", "revision"]);
    const cleanup = (await call(key, { method: "GET", url: "/v1/runtime-logs/cleanup-audit" })).json().items[0];
    expect(cleanup).toMatchObject({ filename: "big.log", dry_run: false, result: "ok", actor: `policy:${p.policy_id}` });

    // A second run finds nothing left, still writes its run record, and never deletes the first run's.
    const again = await waitForJob((await post(`/v1/maintenance/policies/${p.policy_id}/run`)).json().job_id);
    expect(again.result.actions.map((a: any) => a.done.count)).toEqual([0, 0, 0, 0]);
    // The policy's runs (refresh requests are audited as runs of their jobs too).
    const runs = (await call(key, { method: "GET", url: "/v1/audit?action=run&resource_type=maintenance_policy" })).json().items;
    expect(runs).toHaveLength(2);
  });
});
