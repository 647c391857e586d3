import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { sampleValue as value } from "../helpers/prometheus-text.js";
import { tool } from "../helpers/tools.js";
import { until, untilJobDone } from "../helpers/wait.js";

/*
 * The fleet as the metrics show it: figures of the shared state read from the database at
 * scrape time (per tenant on GET /v1/metrics, the deployment's totals on the public /metrics),
 * and what this process counted as it ran jobs. Two controllers: one that runs everything (jobs
 * end), one API-only (jobs stay queued, audit records stay in the outbox).
 */

let all: TestController;
let api: TestController;
const promtool = tool("promtool");

beforeAll(async () => {
  [all, api] = await Promise.all([
    startTestController({ env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" } }),
    startTestController({ env: { APP_SERVICE: "api", AUTH_PORTAL_URL: "http://127.0.0.1:9", AUTH_AUDIT_INGEST_SECRET: "s".repeat(32) } }),
  ]);
});
afterAll(async () => Promise.all([all?.close(), api?.close()]));

/** The public /metrics: this process and the deployment's totals. */
async function scrape(t: TestController): Promise<string> {
  const res = await t.call(null, { method: "GET", url: "/metrics" });
  expect(res.statusCode).toBe(200);
  return res.body;
}

/** GET /v1/metrics with the deployment's superadmin key: every tenant's detail. */
async function fleet(t: TestController): Promise<string> {
  const res = await t.call(t.rootKey, { method: "GET", url: "/v1/metrics" });
  expect(res.statusCode, res.body).toBe(200);
  return res.body;
}

/** Scrapes until the figure is what the test waits for: fleet figures are cached for 2 s. */
function scrapeUntil(t: TestController, check: (text: string) => boolean, from = scrape, ms = 15_000): Promise<string> {
  return until(
    "a scrape showing the awaited figure",
    async () => {
      const text = await from(t);
      return check(text) && text;
    },
    ms,
    250,
  );
}

const tenantOf = async (t: TestController): Promise<string> => (await t.call(t.rootKey, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;

const post = (t: TestController, url: string, payload?: object, key = t.rootKey) => t.call(key, { method: "POST", url, ...(payload ? { payload } : {}) });

describe("fleet metrics", () => {
  it("process metrics keep their standard names; bus and scheduler describe this process", async () => {
    // The first election runs as the controller starts; the scrape may come before it.
    const text = await scrapeUntil(all, (s) => value(s, "rlc_scheduler_leader") === 1);
    expect(value(text, "process_cpu_seconds_total")).not.toBeNull();
    expect(value(text, "nodejs_heap_size_used_bytes")).not.toBeNull();
    expect(text).not.toContain("rlc_process_");
    expect(text).not.toContain("rlc_nodejs_");
    expect(value(text, "rlc_bus_connected", { kind: "memory" })).toBe(1);
    expect(value(text, "rlc_scheduler_leader")).toBe(1);
    const tenant = await tenantOf(all);
    expect(value(await fleet(all), "rlc_tenant_info", { tenant, name: "default" })).toBe(1);
    // An API-only process runs no scheduler: no series rather than a misleading 0.
    expect(value(await scrape(api), "rlc_scheduler_leader")).toBeNull();
  });

  it("a refresh, an apply and the agent's report show as revision prefixes, job runs, speakers by sync_status and report age", async () => {
    const community = (await post(all, "/v1/communities", { community: "65000:100", title: "vpn" })).json();
    const mod = (await post(all, "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
    for (const cidr of ["11.0.0.0/16", "12.0.0.0/16", "2a00:1::/32"]) await post(all, `/v1/modules/${mod.id}/ip-range-entries`, { cidr });
    const refreshed = (await post(all, `/v1/modules/${mod.id}/refresh?wait=true`)).json();
    expect(refreshed.status).toBe("succeeded");
    const tenant = await tenantOf(all);

    const created = (await post(all, "/v1/speakers", { name: "edge-1", mode: "remote", router_id: "192.0.2.1", asn: 65010 })).json();
    const speakerId = created.speaker_id as string;
    const nodeKey = (await post(all, "/v1/nodes/enroll", { hostname: "r1", agent_version: "1.0.0" }, created.enrollment_token)).json().api_key;
    // Each figure's answer is cached on its own (the public scrape shares some): wait for both.
    let text = await scrapeUntil(
      all,
      (s) => value(s, "rlc_speakers", { tenant, sync_status: "unknown" }) === 1 && value(s, "rlc_revision_latest", { tenant }) === refreshed.result.revision_id,
      fleet,
    );
    expect(value(text, "rlc_revision_prefixes", { tenant, ip_version: "4" })).toBe(2);
    expect(value(text, "rlc_revision_prefixes", { tenant, ip_version: "6" })).toBe(1);
    expect(value(text, "rlc_revision_latest", { tenant })).toBe(refreshed.result.revision_id);
    expect(value(text, "rlc_speakers", { tenant, sync_status: "in_sync" })).toBe(0);
    // Enrolled, never reported: an age no threshold is above.
    expect(value(text, "rlc_speaker_last_report_age_seconds", { tenant, speaker: "edge-1", speaker_id: speakerId })).toBe(Number.POSITIVE_INFINITY);
    let totals = await scrapeUntil(all, (s) => value(s, "rlc_deployment_speakers", { sync_status: "unknown" }) === 1);
    expect(value(totals, "rlc_job_run_duration_seconds_count", { type: "module_ingest", outcome: "succeeded" })).toBe(1);

    const apply = (await post(all, "/v1/apply", { speaker_ids: [speakerId], timeout_seconds: 20 })).json();
    let latest: any;
    for (let i = 0; i < 100; i++) {
      latest = await all.call(nodeKey, { method: "GET", url: `/v1/speakers/${speakerId}/revisions/latest` });
      if (latest.statusCode === 200) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const report = await post(
      all,
      `/v1/speakers/${speakerId}/status`,
      {
        speaker_id: speakerId,
        reason: "applied",
        applied_revision_id: latest.json().revision_id,
        applied_sequence: latest.json().sequence,
        applied_digest: latest.json().digest,
        applied_at: new Date().toISOString(),
        error: null,
        bird: { reachable: true, version: "2.0.12" },
        sessions: [],
        agent_version: "1.0.0",
      },
      nodeKey,
    );
    expect(report.statusCode, report.body).toBe(204);
    expect((await untilJobDone(all, apply.job_id)).status).toBe("succeeded");

    text = await scrapeUntil(
      all,
      (s) =>
        value(s, "rlc_speakers", { tenant, sync_status: "in_sync" }) === 1 &&
        Number.isFinite(value(s, "rlc_speaker_last_report_age_seconds", { tenant, speaker_id: speakerId })),
      fleet,
    );
    expect(value(text, "rlc_speakers", { tenant, sync_status: "unknown" })).toBe(0);
    totals = await scrapeUntil(all, (s) => value(s, "rlc_deployment_speakers", { sync_status: "in_sync" }) === 1);
    expect(value(totals, "rlc_deployment_speakers", { sync_status: "unknown" })).toBe(0);
    expect(value(totals, "rlc_apply_duration_seconds_count", { status: "succeeded" })).toBe(1);
    expect(value(totals, "rlc_job_run_duration_seconds_count", { type: "apply", outcome: "awaiting" })).toBe(1);
    const age = value(text, "rlc_speaker_last_report_age_seconds", { tenant, speaker_id: speakerId });
    expect(Number.isFinite(age)).toBe(true);
    expect(value(text, "rlc_jobs", { tenant, status: "awaiting" })).toBeNull();
  });

  it("a refresh that would withdraw too much counts as a guard trip; a feed that cannot be fetched as a source failure", async () => {
    const mod = (await post(all, "/v1/modules", { name: "ranges-2", type: "IP_RANGES" })).json();
    await post(all, `/v1/modules/${mod.id}/cdn-sources`, { url: "http://127.0.0.1:9/feed.txt", format: "text" });
    await post(all, `/v1/modules/${mod.id}/refresh?wait=true`);
    const tenant = await tenantOf(all);
    const other = (await all.call(all.rootKey, { method: "GET", url: "/v1/modules?limit=10" })).json().items.find((m: { name: string }) => m.name === "ranges");
    await all.call(all.rootKey, { method: "PATCH", url: `/v1/modules/${other.id}`, payload: { enabled: false } });
    const tripped = await post(all, "/v1/modules/refresh?wait=true");
    expect(tripped.json().code, tripped.body).toBe("revision_guard_tripped");

    const text = await scrapeUntil(all, (s) => value(s, "rlc_modules_refresh_failing", { tenant }) === 1, fleet);
    expect(value(text, "rlc_ingest_source_failures_total", { tenant, kind: "cdn" })).toBeGreaterThanOrEqual(1);
    const totals = await scrapeUntil(all, (s) => value(s, "rlc_deployment_modules_refresh_failing") === 1);
    expect(value(totals, "rlc_deployment_ingest_source_failures_total", { kind: "cdn" })).toBe(
      value(text, "rlc_ingest_source_failures_total", { tenant, kind: "cdn" }),
    );
    expect(value(totals, "rlc_job_failures_total", { type: "module_ingest", code: "revision_guard_tripped" })).toBe(1);
  });

  it("without a worker, a refresh waits queued and audit records wait in the outbox", async () => {
    const mod = (await post(api, "/v1/modules", { name: "queued", type: "IP_RANGES" })).json();
    const queued = await post(api, `/v1/modules/${mod.id}/refresh`);
    expect(queued.statusCode, queued.body).toBe(202);
    const tenant = await tenantOf(api);
    const text = await scrapeUntil(api, (s) => value(s, "rlc_jobs", { tenant, type: "module_ingest", status: "queued" }) === 1, fleet);
    expect(value(text, "rlc_jobs", { tenant, type: "module_ingest", status: "queued" })).toBe(1);
    expect(value(text, "rlc_jobs_oldest_queued_age_seconds", { tenant, type: "module_ingest" })).toBeGreaterThanOrEqual(0);
    const totals = await scrapeUntil(api, (s) => value(s, "rlc_deployment_jobs", { type: "module_ingest", status: "queued" }) === 1);
    expect(value(totals, "rlc_deployment_jobs_oldest_queued_age_seconds", { type: "module_ingest" })).toBeGreaterThanOrEqual(0);
    expect(value(totals, "rlc_audit_outbox_records")).toBeGreaterThanOrEqual(1);
    expect(value(totals, "rlc_audit_outbox_oldest_age_seconds")).toBeGreaterThanOrEqual(0);
  });

  it.skipIf(!promtool.available)("passes promtool check metrics with every family present, the public scrape and the fleet's", async () => {
    for (const t of [all, api]) {
      for (const text of [await scrape(t), await fleet(t)]) {
        const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
        expect(r.stderr + r.stdout).toBe("");
        expect(r.status).toBe(0);
      }
    }
  });
});
