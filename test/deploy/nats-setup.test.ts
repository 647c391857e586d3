import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { internalSubjects } from "@rlc/proto";
import { afterEach, describe, expect, it } from "vitest";
import { createBus } from "../../packages/controller/src/bus/index.js";
import { ConfigError, loadConfig } from "../../packages/controller/src/config.js";
import { freePort } from "../helpers/lab-daemons.mjs";
import { tool } from "../helpers/tools.js";

const run = promisify(execFile);
const cli = join(import.meta.dirname, "../../packages/controller/dist/cli.js");
const natsServer = tool("nats-server");
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "rl-nats-setup-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

describe.skipIf(!natsServer.available)("the controller's first NATS connection", () => {
  it("is retried with backoff, and succeeds when NATS comes up after the controller", async () => {
    const port = await freePort();
    const retries: { attempt: number; in_ms: number; error: string }[] = [];
    const pending = createBus({ NATS_URL: `nats://127.0.0.1:${port}` }, { onRetry: (r) => retries.push(r), connectTimeoutMs: 20_000 });
    await new Promise((r) => setTimeout(r, 800));
    const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
    cleanups.push(async () => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    });
    const bus = await pending;
    cleanups.unshift(() => bus.close());
    expect(retries.length).toBeGreaterThanOrEqual(1);
    expect(retries[0]).toMatchObject({ attempt: 1, in_ms: 500 });
    const got: unknown[] = [];
    bus.subscribe(internalSubjects.notify("t", "s"), (m) => got.push(m));
    for (let i = 0; i < 50 && got.length === 0; i++) {
      bus.publish(internalSubjects.notify("t", "s"), { type: "live_poll", poll_id: "p" });
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(got[0]).toEqual({ type: "live_poll", poll_id: "p" });
    expect(bus.health()).toBe("ok");
  });

  it("gives up after a bounded time with the last error, having logged each retry", async () => {
    const port = await freePort();
    const retries: unknown[] = [];
    const started = Date.now();
    await expect(createBus({ NATS_URL: `nats://127.0.0.1:${port}` }, { onRetry: (r) => retries.push(r), connectTimeoutMs: 2000 })).rejects.toThrow(
      /NATS unreachable at nats:\/\/127\.0\.0\.1:\d+ after \d+ attempts/,
    );
    expect(Date.now() - started).toBeLessThan(6000);
    expect(retries.length).toBeGreaterThanOrEqual(2);
  });
});

describe("NATS configuration", () => {
  it("refuses credentials without a NATS URL, and an account seed without the controller's own creds", () => {
    expect(() => loadConfig({ NATS_CREDS_FILE: "/x.creds" })).toThrow(ConfigError);
    expect(() => loadConfig({ NATS_URL: "nats://127.0.0.1:4222", NATS_ACCOUNT_SEED_FILE: "/x.nk" })).toThrow(/NATS_ACCOUNT_SEED_FILE needs NATS_CREDS_FILE/);
    expect(loadConfig({ NATS_URL: "nats://127.0.0.1:4222" }).NATS_CREDS_FILE).toBeUndefined();
  });

  it("takes the tenant accounts' authority only whole (operator signing seed, system creds, controller creds, URL), and a stream cap that fits the account", () => {
    const url = "nats://127.0.0.1:4222";
    expect(() => loadConfig({ NATS_URL: url, NATS_CREDS_FILE: "/c", NATS_OPERATOR_SEED_FILE: "/o.nk" })).toThrow(/go together/);
    expect(() => loadConfig({ NATS_URL: url, NATS_SYSTEM_CREDS_FILE: "/s.creds", NATS_OPERATOR_SEED_FILE: "/o.nk" })).toThrow(/go together/);
    expect(loadConfig({ NATS_URL: url, NATS_CREDS_FILE: "/c", NATS_SYSTEM_CREDS_FILE: "/s", NATS_OPERATOR_SEED_FILE: "/o" })).toMatchObject({
      NATS_EVENTS_MAX_BYTES: 64 * 1024 * 1024,
      NATS_TENANT_STORAGE_BYTES: 256 * 1024 * 1024,
      NATS_TENANT_MAX_CONNECTIONS: 10_000,
      NATS_EVENTS_REPLICAS: 1,
    });
    expect(() => loadConfig({ NATS_URL: url, NATS_EVENTS_MAX_BYTES: String(512 * 1024 * 1024) })).toThrow(/NATS_EVENTS_MAX_BYTES must not exceed/);
  });

  it("`controller nats init DIR` writes the operator with its signing key, the controller's account and creds, a system user and a server config with a full resolver (secrets 0600), never over an existing one", async () => {
    if (!existsSync(cli)) throw new Error("packages/controller/dist/cli.js is missing: npm test builds it (npm run build)");
    const dir = join(await tempDir(), "nats");
    const { stdout } = await run(process.execPath, [cli, "nats", "init", dir], { env: { ...process.env, DATABASE_URL: "postgres://unused.invalid/x" } });
    const out = JSON.parse(stdout);
    expect(out).toMatchObject({ operator: expect.stringMatching(/^O/), account: expect.stringMatching(/^A/) });
    expect(out.next).toContain("NATS_OPERATOR_SEED_FILE=");
    const conf = await readFile(out.files.server_config, "utf8");
    expect(conf).toMatch(/^operator: eyJ/m);
    // A NATS-based resolver takes the tenant accounts the controller pushes, without a restart.
    expect(conf).toMatch(/^resolver \{\n {2}type: full\n/m);
    expect(conf).not.toMatch(/MEMORY/);
    expect(conf).toContain(`${out.account}: eyJ`);
    for (const secret of ["controller_creds", "system_creds", "operator_signing_seed", "operator_seed", "account_seed", "system_seed"]) {
      expect(((await stat(out.files[secret])).mode & 0o777).toString(8), secret).toBe("600");
    }
    expect(await readFile(out.files.operator_signing_seed, "utf8")).toMatch(/^SO[A-Z2-7]+\n$/);
    expect(await readFile(out.files.system_creds, "utf8")).toMatch(/-----BEGIN NATS USER JWT-----/);
    const again = await run(process.execPath, [cli, "nats", "init", dir]).catch((e: { code: number; stderr: string }) => e);
    expect(again).toMatchObject({ code: 1 });
    expect(JSON.parse((again as { stderr: string }).stderr).error).toMatch(/already holds a NATS authority/);
    expect(await readFile(out.files.server_config, "utf8")).toBe(conf);
  });
});
