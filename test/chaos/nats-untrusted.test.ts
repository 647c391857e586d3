import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { afterAll, describe, expect, it } from "vitest";
import type { Bus } from "../../packages/controller/src/bus/bus.js";
import { initNatsAuthority, type NatsInitResult } from "../../packages/controller/src/bus/nats-auth.js";
import { createNatsBus } from "../../packages/controller/src/bus/nats-bus.js";
import { loadNatsTenantAuthority, type NatsTenantAuthority } from "../../packages/controller/src/bus/nats-tenants.js";
import { freePort } from "../helpers/lab-daemons.mjs";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

// The controller's NATS restarted with a configuration that does not trust the controller's user
// (another operator's `nats init`, the controller account left out): nats.js meets the same
// authentication error twice and gives up on the connection for good. Until the configuration is
// put right the bus is down, and the controller's requests must not fail for it (a publish is
// best effort); once NATS trusts the controller again the bus must come back by itself, with
// its subscriptions (job wake-ups, lookup invalidations), with no restart of the controller.
const natsServer = tool("nats-server");

describe.skipIf(!natsServer.available)("the controller's NATS no longer trusting it, then trusting it again", () => {
  const dirs: string[] = [];
  let server: ChildProcess | null = null;
  let bus: Bus | null = null;
  let tenantAccounts: NatsTenantAuthority | null = null;

  /** An operator's `nats init` whose server listens on `port`. */
  const authority = async (port: number): Promise<NatsInitResult> => {
    const dir = await mkdtemp(join(tmpdir(), "rl-nats-untrusted-"));
    dirs.push(dir);
    const init = await initNatsAuthority(join(dir, "auth"), { listen: `127.0.0.1:${port}`, http: null });
    return init;
  };
  const start = async (init: NatsInitResult) => {
    const child = spawn("nats-server", ["-c", init.files.server_config], { stdio: ["ignore", "ignore", "pipe"] });
    server = child;
    await new Promise<void>((resolve, reject) => {
      let log = "";
      child.stderr!.on("data", (c: Buffer) => {
        log += c.toString();
        if (log.includes("Server is ready")) {
          child.stderr!.removeAllListeners("data");
          child.stderr!.resume();
          resolve();
        }
      });
      child.once("exit", (code) => reject(new Error(`nats-server exited (${code}):\n${log}`)));
    });
  };
  const stop = async () => {
    const child = server;
    server = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  };
  afterAll(async () => {
    await tenantAccounts?.close();
    await bus?.close();
    await stop();
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it("publishes without throwing while down, and comes back with its subscriptions once trusted again; accounts are pushed again", {
    timeout: 90_000,
  }, async () => {
    const port = await freePort();
    const ours = await authority(port);
    const another = await authority(port);
    const creds = await readFile(ours.files.controller_creds, "utf8");
    await start(ours);
    const retries: string[] = [];
    bus = await createNatsBus({ url: `nats://127.0.0.1:${port}`, name: "rl-controller", creds, onRetry: (i) => void retries.push(i.error) });
    const heard: unknown[] = [];
    bus.subscribe("rl.jobs.wake", (message) => heard.push(message));
    const systemConnections: NatsConnection[] = [];
    let reconnects = 0;
    bus.onReconnect?.(() => reconnects++);
    // The tenant accounts' pushes go through a system user's connection of their own.
    const accounts = await loadNatsTenantAuthority({
      url: `nats://127.0.0.1:${port}`,
      operatorSeedFile: ours.files.operator_signing_seed,
      controllerCredsFile: ours.files.controller_creds,
      systemCredsFile: ours.files.system_creds,
      limits: { maxConnections: 10, storageBytes: 16 * 1024 * 1024 },
      connect: async (options) => {
        const nc = await connect(options);
        if (options.name === "rl-controller system") systemConnections.push(nc);
        return nc;
      },
    });
    tenantAccounts = accounts;
    await accounts.ensureAccount("0d9c4f5e-7c1a-4b7e-9d55-000000000001");

    await stop();
    await start(another);
    await until("nats.js giving up on the connection", async () => retries.some((e) => e.startsWith("the connection closed")), 30_000);
    await until("nats.js giving up on the system user's connection", async () => systemConnections[0]!.isClosed(), 30_000);
    expect(bus.health()).toBe("down");
    expect(() => bus!.publish("rl.jobs.wake", { n: 1 })).not.toThrow();

    await stop();
    await start(ours);
    await until("the bus back", async () => bus!.health() === "ok", 30_000);
    expect(reconnects).toBeGreaterThan(0);
    // An account is pushed again, on a new system connection.
    accounts.forgetPushed();
    await until(
      "an account pushed after the server trusts the controller again",
      () =>
        accounts.ensureAccount("0d9c4f5e-7c1a-4b7e-9d55-000000000002").then(
          () => true,
          () => false,
        ),
      30_000,
    );
    // The subscription made before is there again: a message from another client reaches it.
    const other = await connect({ servers: `nats://127.0.0.1:${port}`, authenticator: credsAuthenticator(new TextEncoder().encode(creds)) });
    try {
      await until(
        "a wake-up through the new connection",
        async () => {
          other.publish("rl.jobs.wake", JSON.stringify({ n: 2 }));
          await other.flush();
          return heard.some((m) => (m as { n?: number }).n === 2);
        },
        20_000,
      );
    } finally {
      await other.close();
    }
  });
});
