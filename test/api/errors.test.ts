import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

function expectProblem(res: { statusCode: number; headers: Record<string, unknown>; json(): any }, status: number, code: string) {
  expect(res.statusCode).toBe(status);
  expect(res.headers["content-type"]).toContain("application/problem+json");
  const body = res.json();
  expect(body).toMatchObject({ status, code, type: `https://route-lists.dev/problems/${code}` });
  expect(typeof body.title).toBe("string");
  expect(typeof body.detail).toBe("string");
  expect(body.request_id).toBe(res.headers["x-request-id"]);
  return body;
}

describe("problem+json for every error", () => {
  it("malformed JSON is a 400 invalid_json", async () => {
    const res = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", headers: { "content-type": "application/json" }, payload: '{"name": ' });
    expectProblem(res, 400, "invalid_json");
  });

  it("an unknown field is a 400 that names it", async () => {
    const res = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "x", role: "viewer", colour: "red" } });
    const body = expectProblem(res, 400, "validation_failed");
    expect(body.errors).toHaveLength(1);
    expect(body.errors[0].path).toBe("body");
    expect(body.errors[0].message).toMatch(/Unrecognized key.*colour/);
  });

  it("an unknown query parameter and an out-of-range limit are 400s with errors[]", async () => {
    expectProblem(await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?colour=red" }), 400, "validation_failed");
    const body = expectProblem(await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?limit=501" }), 400, "validation_failed");
    expect(body.errors[0].path).toBe("query.limit");
    expectProblem(await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?limit=0" }), 400, "validation_failed");
  });

  it("a cursor that does not decode is a 400 invalid_cursor", async () => {
    expectProblem(await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?cursor=nonsense" }), 400, "invalid_cursor");
    // A cursor that decodes but holds no id must not reach SQL (it would be a 500).
    const forged = Buffer.from(JSON.stringify(["x"])).toString("base64url");
    for (const url of ["/v1/api-keys", "/v1/audit", "/v1/jobs", "/v1/tenants"]) {
      expectProblem(await t.call(t.rootKey, { method: "GET", url: `${url}?cursor=${forged}` }), 400, "invalid_cursor");
    }
  });

  it("a path id that is not a UUID is a 400, not a 500", async () => {
    expectProblem(await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys/not-a-uuid" }), 400, "validation_failed");
  });

  it("a wrong content type is a 415", async () => {
    const res = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", headers: { "content-type": "application/xml" }, payload: "<a/>" });
    expectProblem(res, 415, "unsupported_media_type");
  });

  it("a body over the limit is a 413", async () => {
    const res = await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "x".repeat(2 * 1024 * 1024), role: "viewer" } });
    expectProblem(res, 413, "payload_too_large");
  });

  it("an unknown route is a 404 and a wrong method a 405 with Allow", async () => {
    expectProblem(await t.call(null, { method: "GET", url: "/v1/nothing-here" }), 404, "not_found");
    const res = await t.call(t.rootKey, { method: "PUT", url: "/v1/api-keys" });
    expectProblem(res, 405, "method_not_allowed");
    expect(res.headers.allow).toBe("GET, POST");
  });

  it("no key, a malformed key and an unknown key are 401 with WWW-Authenticate", async () => {
    for (const auth of [undefined, "Bearer", "Basic abc", "Bearer rlk_AAAAAAAA_" + "x".repeat(43)]) {
      const res = await t.app.inject({ method: "GET", url: "/v1/api-keys", headers: auth ? { authorization: auth } : {} });
      expectProblem(res, 401, "unauthenticated");
      expect(res.headers["www-authenticate"]).toContain("Bearer");
    }
  });

  it("a missing resource of the caller's tenant is a 404", async () => {
    expectProblem(await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys/01900000-0000-7000-8000-000000000000" }), 404, "not_found");
  });

  it("a taken tenant name is a 409", async () => {
    expect((await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "dup" } })).statusCode).toBe(201);
    expectProblem(await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "dup" } }), 409, "conflict");
  });

  it("X-Request-Id is echoed when given and generated otherwise", async () => {
    const given = await t.call(null, { method: "GET", url: "/v1/health", headers: { "x-request-id": "abc-123" } });
    expect(given.headers["x-request-id"]).toBe("abc-123");
    const made = await t.call(null, { method: "GET", url: "/v1/health" });
    expect(made.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });
});
