import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { ApiError, createClient, unwrap } from "./index.js";

/** A fetch that records the request and answers `status` with `body` and `type`. */
function answering(status: number, body: string, type = "application/json") {
  const seen: Request[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = input instanceof Request ? input : new Request(input, init);
    seen.push(req);
    return new Response(status === 204 ? null : body, { status, headers: { "content-type": type } });
  };
  return { seen, fetch: fetch as typeof globalThis.fetch };
}

describe("createClient", () => {
  it("sends the key as a Bearer token to the base URL, trailing slash or not", async () => {
    const f = answering(200, JSON.stringify({ items: [], next_cursor: null, has_more: false }));
    const client = createClient({ baseUrl: "http://controller.test:3000/", apiKey: "rlk_abc_secret", fetch: f.fetch });
    const data = await unwrap(client.GET("/v1/modules", { params: { query: { limit: 5 } } }));
    expect(data.items).toEqual([]);
    expect(f.seen[0]!.url).toBe("http://controller.test:3000/v1/modules?limit=5");
    expect(f.seen[0]!.headers.get("authorization")).toBe("Bearer rlk_abc_secret");
  });

  it("sends no authorization header without a key", async () => {
    const f = answering(200, JSON.stringify({ status: "ok" }));
    await unwrap(createClient({ baseUrl: "http://controller.test", fetch: f.fetch }).GET("/v1/health"));
    expect(f.seen[0]!.headers.has("authorization")).toBe(false);
  });
});

describe("unwrap", () => {
  it("throws a problem+json answer as an ApiError with its code, status and detail", async () => {
    const problem = { type: "https://errors/not_found", title: "Not Found", status: 404, detail: "module 42 not found", code: "not_found", request_id: "r-1" };
    const f = answering(404, JSON.stringify(problem), "application/problem+json");
    const client = createClient({ baseUrl: "http://controller.test", apiKey: "k", fetch: f.fetch });
    const err = await unwrap(client.GET("/v1/modules/{module_id}", { params: { path: { module_id: "42" } } })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({
      name: "ApiError",
      status: 404,
      code: "not_found",
      detail: "module 42 not found",
      requestId: "r-1",
      message: "module 42 not found",
    });
  });

  it("lists field errors of a validation problem", async () => {
    const problem = {
      type: "t",
      title: "Bad Request",
      status: 400,
      detail: "invalid body",
      code: "validation_failed",
      errors: [{ path: "/name", message: "required" }],
    };
    const f = answering(400, JSON.stringify(problem), "application/problem+json");
    const err = (await unwrap(createClient({ baseUrl: "http://c", fetch: f.fetch }).POST("/v1/modules", { body: {} as never })).catch(
      (e: unknown) => e,
    )) as ApiError;
    expect(err.fieldErrors).toEqual(["/name: required"]);
  });

  it("names a body that is not problem+json by its status", async () => {
    const f = answering(502, "<html>Bad Gateway</html>", "text/html");
    const err = (await unwrap(createClient({ baseUrl: "http://c", fetch: f.fetch }).GET("/v1/health")).catch((e: unknown) => e)) as ApiError;
    expect(err).toMatchObject({ status: 502, code: "http_502" });
    expect(err.detail).toContain("Bad Gateway");
  });

  it("resolves an empty 204 to undefined", async () => {
    const f = answering(204, "");
    const out = await unwrap(createClient({ baseUrl: "http://c", fetch: f.fetch }).DELETE("/v1/modules/{module_id}", { params: { path: { module_id: "m" } } }));
    expect(out).toBeUndefined();
  });
});

describe("browser build", () => {
  it("bundles for the browser with no Node built-in module", async () => {
    const out = await build({
      entryPoints: [new URL("./index.ts", import.meta.url).pathname],
      bundle: true,
      platform: "browser",
      format: "esm",
      write: false,
      logLevel: "silent",
    });
    expect(out.errors).toEqual([]);
    const code = out.outputFiles[0]!.text;
    expect(code).toContain("createClient");
    expect(code).not.toMatch(/from\s*["']node:|require\(["'](node:)?(fs|http|https|net|path|os|crypto)["']\)/);
  });
});
