import { spawnSync } from "node:child_process";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { tool } from "../helpers/tools.js";

let t: TestController;
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

beforeAll(async () => {
  t = await startTestController({ env: { NATS_URL: natsUrl } });
});
afterAll(async () => t?.close());

describe("public routes", () => {
  it("health answers without a key, at /v1/health and /health", async () => {
    for (const url of ["/v1/health", "/health"]) {
      const res = await t.call(null, { method: "GET", url });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: "ok" });
    }
  });

  it("version names the version, commit, build time and api", async () => {
    for (const url of ["/v1/version", "/version"]) {
      const body = (await t.call(null, { method: "GET", url })).json();
      expect(body.api).toBe("v1");
      expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(body.commit).toMatch(/^[0-9a-f]{7,}$|^unknown$/);
      expect(Number.isNaN(Date.parse(body.build_time))).toBe(false);
      expect(body.node).toBe(process.version);
    }
  });

  it("ready checks the database and NATS", async () => {
    const res = await t.call(null, { method: "GET", url: "/v1/ready" });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: "ready", checks: { database: "ok", nats: "ok" } });
  });

  it("other /v1 routes need a key", async () => {
    expect((await t.call(null, { method: "GET", url: "/v1/settings" })).statusCode).toBe(401);
  });
});

describe("metrics", () => {
  it("counts requests by route pattern and status", async () => {
    await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys/01900000-0000-7000-8000-000000000000" });
    const res = await t.call(null, { method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toContain("text/plain");
    expect(res.body).toContain('rlc_http_requests_total{method="GET",route="/v1/api-keys/:id",status="404"} 1');
    expect(res.body).toContain("rlc_http_request_duration_seconds_bucket");
    expect(res.body).toContain("\nprocess_cpu_seconds_total ");
  });

  const promtool = tool("promtool");
  it.skipIf(!promtool.available)("passes promtool check metrics", async () => {
    const text = (await t.call(null, { method: "GET", url: "/metrics" })).body;
    const r = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });
    expect(r.stderr + r.stdout).toBe("");
    expect(r.status).toBe(0);
  });
});

describe("OpenAPI", () => {
  it("serves a valid OpenAPI 3.1 document without a key", async () => {
    const res = await t.call(null, { method: "GET", url: "/v1/openapi.json" });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toBe("3.1.0");
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    for (const path of [
      "/v1/api-keys",
      "/v1/api-keys/{id}",
      "/v1/api-keys/{id}/rotate",
      "/v1/auth/session",
      "/v1/tenants",
      "/v1/settings",
      "/v1/audit",
      "/v1/health",
      "/v1/ready",
      "/v1/version",
    ]) {
      expect(doc.paths, path).toHaveProperty([path]);
    }
    expect(doc.components.schemas).toHaveProperty("Problem");
    expect(doc.components.schemas).toHaveProperty("ApiKey");
  });

  it("serves the reference page at /docs", async () => {
    const res = await t.call(null, { method: "GET", url: "/docs/" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toContain("text/html");
  });
});
