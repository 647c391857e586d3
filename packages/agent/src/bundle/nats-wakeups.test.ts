import { type ChildProcess, spawn } from "node:child_process";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { type AgentNotification, internalSubjects, notificationFromJson } from "@rlc/proto";
import { generateSigningKey, signNotification, verifyNotification } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../../../../test/helpers/lab-daemons.mjs";
import { tool } from "../../../../test/helpers/tools.js";
import { until } from "../../../../test/helpers/wait.js";
import { type Logger, silentLogger } from "../log.js";
import { startNatsWakeups } from "./nats-wakeups.js";

const nats = tool("nats-server");
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A nats-server of this test's own, stopped by pid. */
function startNats(port: number, args: string[] = []): ChildProcess {
  const child = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), ...args], { stdio: "ignore" });
  cleanups.push(async () => {
    if (child.exitCode !== null) return;
    const exited = new Promise((r) => child.once("exit", r));
    child.kill("SIGTERM");
    await exited;
  });
  return child;
}

async function publisher(url: string): Promise<NatsConnection> {
  for (let i = 0; ; i++) {
    try {
      const nc = await connect({ servers: url });
      cleanups.push(() => nc.close());
      return nc;
    } catch (error) {
      if (i > 50) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The agent's wake-ups for speaker s1 of tenant t1, accepting what `key` signed; stopped after the test. */
async function agentWakeups(url: string, woken: (AgentNotification | null)[], log: Logger = silentLogger) {
  const key = await generateSigningKey();
  const keys = [{ key_id: key.keyId, alg: "ed25519", public_key: Buffer.from(key.publicKey).toString("base64"), status: "active" as const }];
  const clock = createSystemClock();
  const wakeups = startNatsWakeups({
    url,
    tenantId: "t1",
    speakerId: "s1",
    onWake: (n) => woken.push(n),
    accept: async (value) => {
      const checked = verifyNotification(value, { tenantId: "t1", speakerId: "s1", keys, now: clock.now() });
      return checked.ok ? notificationFromJson(checked.body) : null;
    },
    clock,
    log,
  });
  cleanups.push(() => wakeups.close());
  return key;
}

describe.skipIf(!nats.available)("NATS wake-ups", () => {
  it("wakes on a signed notification on the speaker's subject, also when NATS comes up after the agent; ignores what is unsigned, foreign, a JetStream delivery or not JSON", async () => {
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    const woken: (AgentNotification | null)[] = [];
    const key = await agentWakeups(url, woken);
    await new Promise((r) => setTimeout(r, 300)); // the agent's first connect fails: no server yet
    startNats(port);
    const nc = await publisher(url);
    const subject = internalSubjects.notify("t1", "s1");
    expect(subject).toBe("rl.t1.speakers.s1.notify");
    const signed = (body: Record<string, unknown>, to = { tenant_id: "t1", speaker_id: "s1" }, at = new Date()) =>
      signNotification(key, { ...body, ...to }, at).then((n) => JSON.stringify(n));
    const revision = await signed({ type: "new_revision", revision_id: 3, digest: "sha256:ab", sequence: 8 });
    // The subscription exists once the agent connected; publish until it hears.
    await until("the condition", async () => {
      nc.publish(subject, revision);
      return woken.length > 0;
    });
    expect(woken[0]).toEqual({ type: "new_revision", speaker_id: "s1", revision_id: 3, digest: "sha256:ab", sequence: 8 });
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200)); // the last of the publishes above arrive
    const before = woken.length;
    nc.publish(subject, "not json");
    nc.publish(subject, JSON.stringify({ type: "live_poll", poll_id: "unsigned" }));
    nc.publish(subject, await signed({ type: "live_poll", poll_id: "for-s2" }, { tenant_id: "t1", speaker_id: "s2" }));
    nc.publish(subject, await signed({ type: "live_poll", poll_id: "old" }, undefined, new Date(Date.now() - 10 * 60_000)));
    const tampered = JSON.parse(await signed({ type: "live_poll", poll_id: "p0" }));
    nc.publish(subject, JSON.stringify({ ...tampered, poll_id: "p9" }));
    // What a JetStream consumer delivers carries a reply subject: never a wake-up, signed or not.
    nc.publish(subject, await signed({ type: "live_poll", poll_id: "delivered" }), { reply: "$JS.ACK.S.C.1.1.1.0.0" });
    nc.publish(subject, await signed({ type: "live_poll", poll_id: "p1" }));
    await until("the condition", async () => woken.length >= before + 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(woken.slice(before)).toEqual([{ type: "live_poll", poll_id: "p1" }]);
  });

  it("connects anew when nats.js gives up (the same authentication error twice, as a replaced server answers until it knows the account), and wakes with null then", async () => {
    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    const woken: (AgentNotification | null)[] = [];
    const warnings: string[] = [];
    const stop = async (child: ChildProcess) => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    };
    let server = startNats(port);
    const key = await agentWakeups(url, woken, { ...silentLogger, warn: (msg) => void warnings.push(msg) });
    const subject = internalSubjects.notify("t1", "s1");
    const poll = async (id: string) =>
      JSON.stringify(await signNotification(key, { type: "live_poll", poll_id: id, tenant_id: "t1", speaker_id: "s1" }, new Date()));
    const heard = async (id: string, publisher: NatsConnection) => {
      const message = await poll(id);
      await until(`wake-up ${id}`, async () => {
        publisher.publish(subject, message);
        return woken.some((n) => n?.type === "live_poll" && n.poll_id === id);
      });
    };
    await heard("before", await publisher(url));

    // A server on the same address that refuses the agent (no credentials it knows): nats.js
    // meets the same authentication error twice and closes the connection for good.
    await stop(server);
    server = startNats(port, ["--user", "someone", "--pass", "else"]);
    await until("nats.js giving up", async () => warnings.includes("NATS connection closed; connecting again"), 30_000);
    await stop(server);
    server = startNats(port);
    const nullsBefore = woken.filter((n) => n === null).length;
    await heard("after", await publisher(url));
    expect(woken.filter((n) => n === null).length).toBeGreaterThan(nullsBefore);
  }, 60_000);

  it("a connection the server keeps closing at once is tried again ever later, not every second", async () => {
    // A server that takes the connection and closes it at once (an account it refuses, too many
    // connections), over a clock of the test's own: an hour of it passes with no real waiting.
    let now = Date.parse("2026-11-29T00:00:00Z");
    const clock = {
      now: () => now,
      sleep: async (ms: number) => {
        now += ms;
        await new Promise((r) => setImmediate(r));
      },
    };
    const start = now;
    const HOUR = 3_600_000;
    /** Connections made in the clock's first hour (the loop runs on past it until the test stops it). */
    let connects = 0;
    const closedAtOnce = () => {
      if (now - start < HOUR) connects++;
      const closed = Promise.resolve(new Error("closed by the server"));
      return {
        subscribe: () => ({}),
        status: () => ({ stop() {}, async *[Symbol.asyncIterator]() {} }),
        closed: () => closed,
        close: async () => {},
        isClosed: () => true,
      } as unknown as NatsConnection;
    };
    const wakeups = startNatsWakeups({
      url: "nats://127.0.0.1:4222",
      tenantId: "t1",
      speakerId: "s1",
      onWake: () => {},
      accept: async () => null,
      clock,
      log: silentLogger,
      connect: async () => closedAtOnce(),
    });
    await until("an hour of the clock", async () => now - start >= HOUR);
    await wakeups.close();
    // With the backoff started over at each connection, one every 0.5–1 s: thousands in the hour.
    // Growing to its 30 s ceiling (waits of 0.5–30 s, ~15 s on average), about 240.
    expect(connects).toBeLessThan(300);
  });
});
