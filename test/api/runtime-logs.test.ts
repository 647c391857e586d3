import { mkdtemp, readFile, rm, stat, symlink, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let dir: string;
let outside: string;
let t: TestController;
let viewer: string;
let operator: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-logs-"));
  outside = await mkdtemp(join(tmpdir(), "rlc-outside-"));
  await writeFile(join(outside, "secret.log"), "do not touch\n");
  await symlink(join(outside, "secret.log"), join(dir, "evil.log"));
  await writeFile(join(dir, "api.log"), Array.from({ length: 500 }, (_, i) => `line ${i} ${i % 7 === 0 ? "ERROR boom" : "ok"}`).join("\n") + "\n");
  await writeFile(join(dir, "small.log"), "tiny\n");
  t = await startTestController({ env: { APP_RUNTIME_LOGS_DIR: dir } });
  viewer = (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "v", role: "viewer" } })).json().secret;
  operator = (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "o", role: "operator" } })).json().secret;
});
afterAll(async () => {
  await t?.close();
  await rm(dir, { recursive: true, force: true });
  await rm(outside, { recursive: true, force: true });
});

describe("runtime logs over HTTP", () => {
  it("lists regular *.log files only, never the symlink", async () => {
    const res = await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files" });
    expect(res.statusCode).toBe(200);
    expect(res.json().items.map((f: { name: string }) => f.name)).toEqual(["api.log", "small.log"]);
    expect(res.json()).toMatchObject({ next_cursor: null, has_more: false });
  });

  it("tails with lines, grep (literal) and as plain text", async () => {
    const tail = await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files/api.log?lines=3" });
    expect(tail.json().lines).toEqual(["line 497 ERROR boom", "line 498 ok", "line 499 ok"]);
    expect(tail.json().truncated).toBe(true);
    const grep = await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files/api.log?lines=2&grep=ERROR" });
    expect(grep.json().lines).toEqual(["line 490 ERROR boom", "line 497 ERROR boom"]);
    const literal = await t.call(t.rootKey, { method: "GET", url: `/v1/runtime-logs/files/api.log?grep=${encodeURIComponent("(a+)+$")}` });
    expect(literal.json().lines).toEqual([]);
    const text = await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files/small.log", headers: { accept: "text/plain" } });
    expect(text.headers["content-type"]).toContain("text/plain");
    expect(text.body).toBe("tiny\n");
  });

  it("refuses traversal and bad names with 400, and a symlink as not found, touching nothing outside", async () => {
    for (const name of ["..%2Fsecret.log", "%2e%2e%2fsecret.log", "a%2Fb.log", "API.log", "api.txt", "%2Fetc%2Fpasswd", "x%00.log"]) {
      const res = await t.call(t.rootKey, { method: "DELETE", url: `/v1/runtime-logs/files/${name}` });
      expect([400, 404], name).toContain(res.statusCode);
      expect(res.statusCode, name).not.toBe(200);
    }
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files/API.log" })).statusCode).toBe(400);
    expect((await t.call(t.rootKey, { method: "DELETE", url: "/v1/runtime-logs/files/evil.log" })).statusCode).toBe(404);
    expect((await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/files/evil.log" })).statusCode).toBe(404);
    expect(await readFile(join(outside, "secret.log"), "utf8")).toBe("do not touch\n");
  });

  it("a viewer of tenant default lists, tails and reads the cleanup audit, as SPEC.md gives it", async () => {
    const list = await t.call(viewer, { method: "GET", url: "/v1/runtime-logs/files" });
    expect(list.statusCode, list.body).toBe(200);
    expect(list.json().items.map((f: { name: string }) => f.name)).toContain("small.log");
    const tail = await t.call(viewer, { method: "GET", url: "/v1/runtime-logs/files/small.log" });
    expect(tail.statusCode, tail.body).toBe(200);
    expect(tail.json().lines).toEqual(["tiny"]);
    expect((await t.call(viewer, { method: "GET", url: "/v1/runtime-logs/cleanup-audit" })).statusCode).toBe(200);
  });

  it("a viewer cannot clean up, estimate or run the automatic cleanup; an operator truncates and the cleanup is audited", async () => {
    for (const [method, url] of [
      ["DELETE", "/v1/runtime-logs/files/small.log"],
      ["GET", "/v1/runtime-logs/auto-estimate"],
      ["POST", "/v1/runtime-logs/auto-run?dry_run=true"],
    ] as const) {
      const refused = await t.call(viewer, { method, url });
      expect(refused.statusCode, `${method} ${url}`).toBe(403);
      expect(refused.json().code).toBe("forbidden");
    }
    expect((await stat(join(dir, "small.log"))).size).toBe(5);
    const res = await t.call(operator, { method: "DELETE", url: "/v1/runtime-logs/files/small.log" });
    expect(res.statusCode, res.body).toBe(200);
    const prefix = (await t.call(operator, { method: "GET", url: "/v1/auth/session" })).json().key_prefix;
    expect(res.json()).toMatchObject({
      filename: "small.log",
      mode: "truncate",
      bytes_before: 5,
      bytes_after: 0,
      actor: `key:${prefix}`,
      actor_prefix: "manual",
      dry_run: false,
      result: "ok",
    });
    expect((await stat(join(dir, "small.log"))).size).toBe(0);
    const del = await t.call(operator, { method: "DELETE", url: "/v1/runtime-logs/files/small.log?mode=delete" });
    expect(del.json().mode).toBe("delete");
    await expect(stat(join(dir, "small.log"))).rejects.toThrow();
  });

  it("refuses a file over 512 MiB with 413 file_too_large and records the attempt", async () => {
    await writeFile(join(dir, "huge.log"), "");
    await truncate(join(dir, "huge.log"), 600 * 1024 * 1024);
    const res = await t.call(t.rootKey, { method: "DELETE", url: "/v1/runtime-logs/files/huge.log" });
    expect(res.statusCode).toBe(413);
    expect(res.json().code).toBe("file_too_large");
    expect((await stat(join(dir, "huge.log"))).size).toBe(600 * 1024 * 1024);
    const audit = await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/cleanup-audit" });
    expect(audit.json().items[0]).toMatchObject({ filename: "huge.log", result: "failed", error: "file_too_large" });
  });

  it("auto-estimate and auto-run follow the tenant's settings, an operator's to set and run; dry runs are recorded and change nothing", async () => {
    const set = await t.call(operator, {
      method: "PATCH",
      url: "/v1/settings",
      payload: { runtime_logs_auto_threshold_bytes: 1000, runtime_logs_auto_mode: "truncate" },
    });
    expect(set.statusCode, set.body).toBe(200);
    const est = await t.call(operator, { method: "GET", url: "/v1/runtime-logs/auto-estimate" });
    expect(est.json().threshold_bytes).toBe(1000);
    expect(
      est
        .json()
        .files.map((f: { name: string }) => f.name)
        .sort(),
    ).toEqual(["api.log", "huge.log"]);
    const dry = await t.call(operator, { method: "POST", url: "/v1/runtime-logs/auto-run?dry_run=true" });
    expect(dry.statusCode).toBe(200);
    expect(dry.json().dry_run).toBe(true);
    expect((await stat(join(dir, "api.log"))).size).toBeGreaterThan(1000);
    const run = await t.call(operator, { method: "POST", url: "/v1/runtime-logs/auto-run" });
    expect(run.json().freed_bytes).toBeGreaterThan(600 * 1024 * 1024);
    expect((await stat(join(dir, "api.log"))).size).toBe(0);
    const audit = (await t.call(t.rootKey, { method: "GET", url: "/v1/runtime-logs/cleanup-audit?limit=500" })).json().items;
    expect(audit.filter((r: { actor_prefix: string; dry_run: boolean }) => r.actor_prefix === "auto:api" && r.dry_run)).toHaveLength(2);
    expect(audit.filter((r: { actor_prefix: string; dry_run: boolean }) => r.actor_prefix === "auto:api" && !r.dry_run)).toHaveLength(2);
  });
});

describe("runtime logs unavailable", () => {
  it("answers 503 runtime_logs_unavailable for file operations, while the cleanup audit still answers", async () => {
    const other = await startTestController();
    try {
      for (const [method, url] of [
        ["GET", "/v1/runtime-logs/files"],
        ["GET", "/v1/runtime-logs/files/a.log"],
        ["DELETE", "/v1/runtime-logs/files/a.log"],
        ["GET", "/v1/runtime-logs/auto-estimate"],
        ["POST", "/v1/runtime-logs/auto-run"],
      ] as const) {
        const res = await other.call(other.rootKey, { method, url });
        expect(res.statusCode, url).toBe(503);
        expect(res.json().code).toBe("runtime_logs_unavailable");
      }
      expect((await other.call(other.rootKey, { method: "GET", url: "/v1/runtime-logs/cleanup-audit" })).statusCode).toBe(200);
    } finally {
      await other.close();
    }
  });
});
