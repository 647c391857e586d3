import type { AddressInfo } from "node:net";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// Real sockets against app.listen: inject never goes through Node's HTTP timeouts.
let t: TestController;
let port: number;

beforeAll(async () => {
  t = await startTestController({ env: { HTTP_HEADERS_TIMEOUT_MS: "400", HTTP_REQUEST_TIMEOUT_MS: "800", HTTP_KEEPALIVE_TIMEOUT_MS: "300" } });
  await t.app.listen({ host: "127.0.0.1", port: 0 });
  port = (t.app.server.address() as AddressInfo).port;
});
afterAll(async () => t?.close());

/** Writes `text`, then waits for the server to close the socket; null when it is still open after `waitMs`. */
function closedAfter(text: string, waitMs = 10_000): Promise<{ ms: number; answer: string } | null> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, "127.0.0.1", () => socket.write(text));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => {
      answer += chunk;
    });
    socket.on("error", reject);
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, waitMs);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve({ ms: performance.now() - started, answer });
    });
  });
}

describe("HTTP limits - timeouts", () => {
  it("a request announcing a body and sending 1 byte is closed with a 408 within the request timeout", async () => {
    // 10 kB: under the enrollment's 16 KiB limit (100 kB is refused at once with a 413, see below).
    const head = "POST /v1/nodes/enroll HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{";
    const closed = await closedAfter(head);
    expect(closed, "the server kept the socket open").not.toBeNull();
    // 800 ms request timeout, checked every 200 ms; the bound leaves room for a loaded machine.
    expect(closed!.ms).toBeLessThan(6000);
    expect(closed!.answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it("headers that never end are closed within the headers timeout", async () => {
    const closed = await closedAfter("GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    expect(closed, "the server kept the socket open").not.toBeNull();
    expect(closed!.ms).toBeLessThan(6000);
  });

  it("an idle keep-alive connection is closed after the keep-alive timeout", async () => {
    const closed = await closedAfter("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n");
    expect(closed, "the server kept the socket open").not.toBeNull();
    expect(closed!.answer).toMatch(/^HTTP\/1\.1 200/);
    expect(closed!.ms).toBeLessThan(6000);
  });
});

describe("HTTP limits - body limits in the OpenAPI document", () => {
  it("every operation with a body states its limit; the CSV import its own 64 MiB", async () => {
    const doc = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    expect(doc.paths["/v1/modules/{module_id}/entries.csv"].post["x-body-limit"]).toBe(64 * 1024 * 1024);
    expect(doc.paths["/v1/modules"].post["x-body-limit"]).toBe(1024 * 1024);
    expect(doc.paths["/v1/nodes/enroll"].post["x-body-limit"]).toBe(16 * 1024);
    expect(doc.paths["/v1/modules"].get["x-body-limit"]).toBeUndefined();
    for (const [path, ops] of Object.entries<Record<string, { requestBody?: unknown }>>(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) if (op.requestBody) expect(op, `${method} ${path}`).toHaveProperty("x-body-limit");
    }
  });
});

describe("HTTP limits - headers", () => {
  it("an enrollment announcing 100 kB is answered 413 at once", async () => {
    const closed = await closedAfter("POST /v1/nodes/enroll HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{");
    expect(closed?.answer).toMatch(/^HTTP\/1\.1 413/);
  });

  it("an enrollment body over 16 KiB is a 413 before any token is looked at", async () => {
    const res = await t.call("rlk_nothing", { method: "POST", url: "/v1/nodes/enroll", payload: { hostname: "x".repeat(20_000), agent_version: "1" } });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe("payload_too_large");
  });

  it("/docs carries a Content-Security-Policy, nosniff and X-Frame-Options DENY", async () => {
    for (const url of ["/docs", "/docs/", "/docs/static/swagger-ui.css"]) {
      const res = await t.call(null, { method: "GET", url });
      expect(res.headers["content-security-policy"], url).toContain("default-src 'self'");
      expect(res.headers["content-security-policy"], url).toContain("frame-ancestors 'none'");
      expect(res.headers["x-content-type-options"], url).toBe("nosniff");
      expect(res.headers["x-frame-options"], url).toBe("DENY");
    }
    const html = await t.call(null, { method: "GET", url: "/docs/" });
    expect(html.statusCode).toBe(200);
    expect(html.headers["content-type"]).toContain("text/html");
  });

  it("JSON answers are nosniff with a policy that allows nothing", async () => {
    const res = await t.call(null, { method: "GET", url: "/v1/health" });
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["content-security-policy"]).toBe("default-src 'none'; frame-ancestors 'none'");
  });

  it("an X-Request-Id outside the strict format is replaced by a generated one", async () => {
    for (const given of ["has space", "x".repeat(129), "<script>", "a/b", "é"]) {
      const res = await t.call(null, { method: "GET", url: "/v1/health", headers: { "x-request-id": given } });
      expect(res.headers["x-request-id"], given).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("a reused X-Request-Id is never taken as unique: each audit record keeps its own id", async () => {
    const ids: string[] = [];
    for (const name of ["same-request-1", "same-request-2"]) {
      const res = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name, role: "viewer" }, headers: { "x-request-id": "reused-id" } });
      expect(res.statusCode).toBe(201);
      ids.push(res.json().id);
    }
    const audit = (await t.call(t.rootKey, { method: "GET", url: "/v1/audit?resource_type=api_key&limit=500" })).json().items;
    const records = audit.filter((r: { resource_id: string }) => ids.includes(r.resource_id));
    expect(records).toHaveLength(2);
    expect(records.map((r: { request_id: string }) => r.request_id)).toEqual(["reused-id", "reused-id"]);
    expect(new Set(records.map((r: { id: string }) => r.id)).size).toBe(2);
  });
});

describe("HTTP limits - enrollment text", () => {
  it("hostname and agent_version with a newline or a control character are refused; the token still works", async () => {
    const created = await t.call(t.rootKey, {
      method: "POST",
      url: "/v1/speakers",
      payload: { name: "ctl-chars", mode: "remote", router_id: "192.0.2.9", asn: 65019, policies_json: { local_ip: "192.0.2.9" } },
    });
    expect(created.statusCode, created.body).toBe(201);
    const token = created.json().enrollment_token as string;
    const enroll = (payload: object) => t.call(token, { method: "POST", url: "/v1/nodes/enroll", payload });
    for (const payload of [
      { hostname: "r1\nSpeaker deleted by admin", agent_version: "1.0.0" },
      { hostname: "r1\r", agent_version: "1.0.0" },
      { hostname: "r1\u001b[31m", agent_version: "1.0.0" },
      { hostname: "r1", agent_version: "1.0\u0000" },
      { hostname: "r1", agent_version: "1.0\u2028forged" },
      { hostname: "r1", agent_version: "1.0\u0085" },
    ]) {
      const res = await enroll(payload);
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().code).toBe("validation_failed");
    }
    const ok = await enroll({ hostname: "r1.example", agent_version: "1.0.0" });
    expect(ok.statusCode, ok.body).toBe(201);
  });
});
