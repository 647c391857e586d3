import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// How the controller serves the console's files: a stand-in build (an index.html and one
// asset) in a directory of its own, so this runs without building the console first.

const dir = mkdtempSync(join(tmpdir(), "rlc-console-"));
mkdirSync(join(dir, "assets"));
writeFileSync(join(dir, "index.html"), '<!doctype html><script type="module" src="/console/assets/app-abc123.js"></script>');
writeFileSync(join(dir, "assets", "app-abc123.js"), "console.log('console');");

let on: TestController;
let off: TestController;
beforeAll(async () => {
  [on, off] = await Promise.all([
    startTestController({ env: { APP_CONSOLE_DIR: dir } }),
    startTestController({ env: { APP_CONSOLE_DIR: dir, APP_CONSOLE: "false" } }),
  ]);
});
afterAll(async () => {
  await Promise.all([on?.close(), off?.close()]);
  rmSync(dir, { recursive: true, force: true });
});

const csp = (res: { headers: Record<string, unknown> }) => String(res.headers["content-security-policy"]);

describe("console static files", () => {
  it("/, /console/ and any deep link under /console/ answer the page, without a key and never cached", async () => {
    for (const url of ["/", "/console/", "/console/modules", "/console/revisions/3/diff/4?x=1"]) {
      const res = await on.call(null, { method: "GET", url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(res.body).toContain("/console/assets/app-abc123.js");
      expect(res.headers["cache-control"]).toBe("no-cache");
    }
    const bare = await on.call(null, { method: "GET", url: "/console" });
    expect(bare.statusCode).toBe(301);
    expect(bare.headers.location).toBe("/console/");
  });

  it("the page's policy allows only this origin's scripts and styles: nothing inline, no other origin, no framing", async () => {
    const res = await on.call(null, { method: "GET", url: "/console/routers" });
    const policy = csp(res);
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("style-src 'self'");
    expect(policy).toContain("connect-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
    expect(res.headers["x-frame-options"]).toBe("DENY");
    expect(res.headers["x-content-type-options"]).toBe("nosniff");
    expect(res.headers["referrer-policy"]).toBe("no-referrer");
  });

  it("hashed assets are served for a year, a missing one is a problem+json 404 (not the page)", async () => {
    const asset = await on.call(null, { method: "GET", url: "/console/assets/app-abc123.js" });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers["content-type"]).toMatch(/javascript/);
    expect(asset.headers["cache-control"]).toMatch(/max-age=31536000.*immutable/);
    const missing = await on.call(null, { method: "GET", url: "/console/assets/nope.js" });
    expect(missing.statusCode).toBe(404);
    expect(missing.headers["content-type"]).toMatch(/^application\/problem\+json/);
    const walk = await on.call(null, { method: "GET", url: "/console/assets/..%2f..%2fetc%2fpasswd" });
    expect(walk.statusCode).not.toBe(200);
  });

  it("the console's routes are not in the OpenAPI document, and /v1 answers keep the API policy", async () => {
    const doc = (await on.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    expect(Object.keys(doc.paths).filter((p) => p === "/" || p.startsWith("/console"))).toEqual([]);
    const api = await on.call(on.rootKey, { method: "GET", url: "/v1/auth/session" });
    expect(csp(api)).toBe("default-src 'none'; frame-ancestors 'none'");
  });

  it("APP_CONSOLE=false serves none of it", async () => {
    for (const url of ["/", "/console/", "/console/modules", "/console/assets/app-abc123.js"]) {
      const res = await off.call(null, { method: "GET", url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    }
  });
});
