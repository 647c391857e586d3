import { execFile } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { until } from "../helpers/wait.js";
import { assertBuilt, type ControllerProcess, newBootstrapKey, startControllerProcess } from "../process-roles/controller-process.js";

// The embedded database (what `npm start` runs on): a controller killed with -9 in the middle
// of a refresh or an apply starts again with nothing half-written, and `controller backup` /
// `controller restore` carry it to a fresh directory.
const cli = join(import.meta.dirname, "../../packages/controller/dist/cli.js");
const exec = promisify(execFile);
const running: ControllerProcess[] = [];
const key = newBootstrapKey();
let dir: string;

async function controllerCli(args: string[], env: Record<string, string>) {
  const { DATABASE_URL: _u, APP_DATA_DIR: _d, ...rest } = process.env;
  try {
    const { stdout } = await exec(process.execPath, [cli, ...args], { env: { ...rest, ...env } });
    return { code: 0, json: JSON.parse(stdout) };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, json: null, stderr: e.stderr };
  }
}

const start = (name: string, dataDir: string) => startControllerProcess(running, name, { BOOTSTRAP_API_KEY: key, APP_DATA_DIR: dataDir });

async function state(c: ControllerProcess) {
  const modules = (await c.call(key, "GET", "/v1/modules")).json.items.map((m: { id: string; name: string }) => [m.id, m.name]);
  const revisions = (await c.call(key, "GET", "/v1/revisions")).json.items.map((r: { revision_id: number; prefix_count?: number }) => r.revision_id);
  const signing = (await c.call(key, "GET", "/v1/nodes/signing-keys")).json.keys.map((k: { key_id: string }) => k.key_id);
  return { modules, revisions, signing };
}

describe("the embedded database: kill -9, backup and restore", () => {
  beforeAll(async () => {
    assertBuilt(["db/embedded-backup.js"]);
    dir = await mkdtemp(join(tmpdir(), "rl-embedded-"));
  });
  afterEach(async () => {
    for (const p of running.splice(0)) await p.stop("SIGKILL");
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it("a controller killed during a refresh and during an apply starts again; nothing half-written, the interrupted jobs end", {
    timeout: 180_000,
  }, async () => {
    const a = join(dir, "a");
    let c = await start("first", a);
    const mod = (await c.call(key, "POST", "/v1/modules", { name: "crash", type: "IP_RANGES" })).json;
    const rows = Array.from({ length: 2000 }, (_, i) => `10.${(i >> 8) & 255}.${i & 255}.0/24`).join("\n");
    const imported = await fetch(`${c.base}/v1/modules/${mod.id}/entries.csv`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "text/csv" },
      body: `cidr,comment\n${rows}\n`,
    });
    expect(imported.status, await imported.text()).toBeLessThan(300);
    await c.call(key, "POST", "/v1/speakers", { name: "edge-c", mode: "remote", router_id: "192.0.2.50", asn: 65010 });

    // During a refresh.
    const refresh = await c.call(key, "POST", `/v1/modules/${mod.id}/refresh`);
    expect(refresh.status).toBe(202);
    await new Promise((r) => setTimeout(r, 150));
    await c.stop("SIGKILL");
    c = await start("after-refresh-kill", a);
    const job = await until(
      "the interrupted refresh to end",
      async () => {
        const j = (await c.call(key, "GET", `/v1/jobs/${refresh.json.job_id}`)).json;
        return ["succeeded", "failed", "cancelled"].includes(j.status) ? j : null;
      },
      60_000,
    );
    const revisions = (await c.call(key, "GET", "/v1/revisions")).json.items;
    // A revision exists whole or not at all: each one listed reads back with its prefixes.
    for (const r of revisions) expect((await c.call(key, "GET", `/v1/revisions/${r.revision_id}/prefixes?limit=1`)).status).toBe(200);
    if (job.status === "succeeded") expect(revisions.length).toBeGreaterThan(0);

    // During an apply.
    const done = await c.call(key, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(done.status, JSON.stringify(done.json)).toBe(200);
    const apply = await c.call(key, "POST", "/v1/apply", {});
    expect(apply.status, JSON.stringify(apply.json)).toBe(202);
    await new Promise((r) => setTimeout(r, 100));
    await c.stop("SIGKILL");
    c = await start("after-apply-kill", a);
    const applyJob = (await c.call(key, "GET", `/v1/jobs/${apply.json.job_id}`)).json;
    expect(applyJob.job_id ?? applyJob.id).toBeTruthy();
    expect(["queued", "running", "awaiting", "succeeded", "failed", "cancelled"]).toContain(applyJob.status);
    // The controller works on: a new write commits.
    expect((await c.call(key, "POST", "/v1/modules", { name: "after-crash", type: "IP_RANGES" })).status).toBe(201);
  });

  it("`controller backup` then `controller restore` into a fresh directory reads the same modules, revisions and keys", { timeout: 180_000 }, async () => {
    const a = join(dir, "a");
    const before = await state(await start("source", a));
    for (const p of running.splice(0)) await p.stop();
    const file = join(dir, "backup.tar.gz");
    const backup = await controllerCli(["backup", file], { APP_DATA_DIR: a });
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.json).toMatchObject({ backup: file, bytes: expect.any(Number), schema_version: expect.any(Number) });

    const b = join(dir, "b");
    const restored = await controllerCli(["restore", file], { APP_DATA_DIR: b });
    expect(restored.code, restored.stderr).toBe(0);
    // The data key travels beside the backup, not in it.
    await copyFile(join(a, "secret.key"), join(b, "secret.key"));
    const after = await state(await start("restored", b));
    expect(after).toEqual(before);
    expect(after.modules.length).toBeGreaterThan(0);
    for (const p of running.splice(0)) await p.stop();

    // Never over a database that exists; never for PostgreSQL.
    expect((await controllerCli(["restore", file], { APP_DATA_DIR: b })).code).toBe(1);
    expect((await controllerCli(["backup", file], { APP_DATA_DIR: a, DATABASE_URL: "postgres://x.invalid/db" })).code).toBe(2);
  });
});
