import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { mintApiKey } from "../../packages/controller/src/services/access/api-keys.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { samplesOf, sampleValue } from "../helpers/prometheus-text.js";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

/*
 * Who sees which tenant in the metrics. The public /metrics (no key) keeps this process's and
 * the deployment's totals and names no tenant or speaker; GET /v1/metrics answers the fleet
 * detail of the key's own tenant, and of every tenant to the deployment's superadmins.
 */

interface Tenant {
  id: string;
  name: string;
  /** A superadmin key of the tenant. */
  root: string;
  speakerId: string;
  speakerName: string;
  /** The speaker's node key. */
  nodeKey: string;
}

let t: TestController;
let defaultId: string;
let acme: Tenant;
let beta: Tenant;
let betaViewer: string;
const promtool = tool("promtool");

const call = (key: string | null, method: "GET" | "POST", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });

async function makeTenant(name: string, speakerName: string): Promise<Tenant> {
  const created = await call(t.rootKey, "POST", "/v1/tenants", { name });
  expect(created.statusCode, created.body).toBe(201);
  const id = created.json().tenant_id as string;
  const { secret: root } = await mintApiKey(t.controller.db.sql, { tenantId: id, name: "root", role: "superadmin", now: new Date() });
  const speaker = await call(root, "POST", "/v1/speakers", { name: speakerName, mode: "remote", router_id: "192.0.2.1", asn: 65010 });
  expect(speaker.statusCode, speaker.body).toBe(201);
  const enrolled = await call(speaker.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: speakerName, agent_version: "1.0.0" });
  expect(enrolled.statusCode, enrolled.body).toBe(201);
  return { id, name, root, speakerId: speaker.json().speaker_id, speakerName, nodeKey: enrolled.json().api_key };
}

beforeAll(async () => {
  t = await startTestController();
  defaultId = (await call(t.rootKey, "GET", "/v1/auth/session")).json().tenant_id;
  acme = await makeTenant("metrics-acme", "acme-edge-1");
  beta = await makeTenant("metrics-beta", "beta-edge-1");
  const viewer = await call(beta.root, "POST", "/v1/api-keys", { name: "grafana", role: "viewer" });
  expect(viewer.statusCode, viewer.body).toBe(201);
  betaViewer = viewer.json().secret;
});
afterAll(async () => t?.close());

/** The tenants a text names in its `tenant` labels. */
const tenantsIn = (text: string) => new Set(samplesOf(text).flatMap((s) => (s.labels.tenant === undefined ? [] : [s.labels.tenant])));

async function fleetScrape(key: string): Promise<string> {
  const res = await call(key, "GET", "/v1/metrics");
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers["content-type"]).toContain("text/plain");
  return res.body;
}

describe("the public /metrics", () => {
  it("names no tenant and no speaker: no id, name or label of either, and no per-tenant series", async () => {
    const res = await call(null, "GET", "/metrics");
    expect(res.statusCode).toBe(200);
    const text = res.body;
    for (const secret of [defaultId, acme.id, beta.id, acme.name, beta.name, acme.speakerId, beta.speakerId, acme.speakerName, beta.speakerName]) {
      expect(text).not.toContain(secret);
    }
    const labelled = samplesOf(text).filter((s) => ["tenant", "name", "speaker", "speaker_id"].some((l) => l in s.labels));
    expect(labelled.map((s) => s.name)).toEqual([]);
    for (const family of [
      "rlc_tenant_info",
      "rlc_speaker_last_report_age_seconds",
      "rlc_jobs",
      "rlc_jobs_oldest_queued_age_seconds",
      "rlc_speakers",
      "rlc_revision_latest",
      "rlc_revision_prefixes",
      "rlc_modules_refresh_failing",
      "rlc_ingest_source_failures_total",
    ]) {
      expect(text, family).not.toMatch(new RegExp(`^# TYPE ${family} `, "m"));
    }
  });

  it("keeps the process, HTTP and deployment-wide totals", async () => {
    const text = (await call(null, "GET", "/metrics")).body;
    expect(sampleValue(text, "process_cpu_seconds_total")).not.toBeNull();
    expect(text).toContain('rlc_http_requests_total{method="POST",route="/v1/speakers",status="201"} 2');
    // Both tenants' enrolled speakers, counted together: never reported, so `unknown`.
    expect(sampleValue(text, "rlc_deployment_speakers", { sync_status: "unknown" })).toBe(2);
    expect(sampleValue(text, "rlc_deployment_speakers", { sync_status: "in_sync" })).toBe(0);
    expect(sampleValue(text, "rlc_deployment_modules_refresh_failing")).toBe(0);
    expect(sampleValue(text, "rlc_audit_outbox_records")).not.toBeNull();
  });
});

describe("GET /v1/metrics", () => {
  it("needs a key", async () => {
    const res = await call(null, "GET", "/v1/metrics");
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe("unauthenticated");
  });

  it("refuses a key without bgp:monitoring:read (a node key)", async () => {
    const res = await call(beta.nodeKey, "GET", "/v1/metrics");
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe("forbidden");
  });

  it("answers a viewer of tenant beta with beta's series only", async () => {
    const text = await fleetScrape(betaViewer);
    expect([...tenantsIn(text)]).toEqual([beta.id]);
    expect(sampleValue(text, "rlc_tenant_info", { tenant: beta.id, name: beta.name })).toBe(1);
    expect(sampleValue(text, "rlc_speaker_last_report_age_seconds", { tenant: beta.id, speaker: beta.speakerName, speaker_id: beta.speakerId })).toBe(
      Number.POSITIVE_INFINITY,
    );
    expect(sampleValue(text, "rlc_speakers", { tenant: beta.id, sync_status: "unknown" })).toBe(1);
    for (const other of [defaultId, acme.id, acme.name, acme.speakerId, acme.speakerName]) expect(text).not.toContain(other);
  });

  it("answers a superadmin of another tenant than default with that tenant's series only", async () => {
    const text = await fleetScrape(beta.root);
    expect([...tenantsIn(text)]).toEqual([beta.id]);
    expect(text).not.toContain(acme.id);
  });

  it("answers the deployment's superadmin (tenant default) with every tenant", async () => {
    const text = await until(
      "a scrape with both tenants' speakers",
      async () => {
        const s = await fleetScrape(t.rootKey);
        return sampleValue(s, "rlc_speaker_last_report_age_seconds", { speaker_id: beta.speakerId }) !== null && s;
      },
      10_000,
      250,
    );
    expect(tenantsIn(text)).toEqual(new Set([defaultId, acme.id, beta.id]));
    for (const x of [acme, beta]) {
      expect(sampleValue(text, "rlc_tenant_info", { tenant: x.id, name: x.name })).toBe(1);
      expect(sampleValue(text, "rlc_speaker_last_report_age_seconds", { tenant: x.id, speaker: x.speakerName, speaker_id: x.speakerId })).toBe(
        Number.POSITIVE_INFINITY,
      );
    }
  });

  it.skipIf(!promtool.available)("passes promtool check metrics, for one tenant and for all", async () => {
    for (const key of [betaViewer, t.rootKey]) {
      const r = spawnSync("promtool", ["check", "metrics"], { input: await fleetScrape(key), encoding: "utf8" });
      expect(r.stderr + r.stdout).toBe("");
      expect(r.status).toBe(0);
    }
  });
});

describe("METRICS_PORT", () => {
  it("puts /metrics on a listener of its own (loopback unless METRICS_HOST says otherwise); the API's listener no longer answers it", async () => {
    const own = await startTestController({ env: { METRICS_PORT: "0" } });
    try {
      const listener = own.controller.metricsListener!;
      expect(listener.address).toBe(`127.0.0.1:${listener.port}`);
      const res = await fetch(`http://127.0.0.1:${listener.port}/metrics`);
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(sampleValue(text, "process_cpu_seconds_total")).not.toBeNull();
      expect(text).toContain("rlc_deployment_speakers");
      // Only /metrics there: the fleet detail stays an API operation, with a key.
      expect((await fetch(`http://127.0.0.1:${listener.port}/v1/metrics`, { headers: { authorization: `Bearer ${own.rootKey}` } })).status).toBe(404);
      expect((await own.call(null, { method: "GET", url: "/metrics" })).statusCode).toBe(404);
      expect((await own.call(own.rootKey, { method: "GET", url: "/v1/metrics" })).statusCode).toBe(200);
      // The API's requests are still counted, on the listener that shows them.
      const after = await (await fetch(`http://127.0.0.1:${listener.port}/metrics`)).text();
      expect(after).toContain('rlc_http_requests_total{method="GET",route="/v1/metrics",status="200"} 1');
    } finally {
      await own.close();
    }
    expect(t.controller.metricsListener).toBeNull();
  });

  it("METRICS_HOST without METRICS_PORT is refused at start", () => {
    expect(() => loadConfig({ METRICS_HOST: "10.0.0.1" })).toThrow(/METRICS_HOST needs METRICS_PORT/);
    expect(() => loadConfig({ METRICS_PORT: "http" })).toThrow(/METRICS_PORT/);
  });
});
