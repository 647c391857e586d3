import { readFile } from "node:fs/promises";
import { AckPolicy, DeliverPolicy, jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { type AgentNotification, eventStreamName, eventSubjects, internalSubjects, notificationFromJson } from "@rlc/proto";
import { verifyNotification } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsWakeups } from "../../packages/agent/src/bundle/nats-wakeups.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { type SecuredNats, startSecuredNats } from "../helpers/nats-secured.js";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

// One NATS account per tenant, against a real nats-server configured by `controller nats init`
// and the accounts the controller pushes. What is tried is what a tenant's read-only monitoring
// user could do on a shared account: name another tenant's subject as a consumer's deliver
// subject or as the reply subject of a JetStream request (NATS checks neither against the
// user's permissions).
const natsServer = tool("nats-server");
const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Tenant {
  id: string;
  key: string;
  monitoring: { creds: string; stream: string; inbox_prefix: string; account: string };
  speaker: { id: string; nodeKey: string; creds: string };
}

let nats: SecuredNats;
let t: LiveController;
let a: Tenant;
let b: Tenant;
const connections: NatsConnection[] = [];

async function connectAs(creds: string, inboxPrefix?: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: nats.url,
    authenticator: credsAuthenticator(encoder.encode(creds)),
    reconnect: false,
    ...(inboxPrefix ? { inboxPrefix } : {}),
  });
  connections.push(nc);
  return nc;
}

/** Subscribes and waits until the server has the subscription; answers what arrives. */
async function listen(nc: NatsConnection, subject: string): Promise<{ subject: string; data: string }[]> {
  const seen: { subject: string; data: string }[] = [];
  nc.subscribe(subject, { callback: (err, m) => void (err ? null : seen.push({ subject: m.subject, data: decoder.decode(m.data) })) });
  await nc.flush();
  return seen;
}

async function tenant(key: string, name: string): Promise<Tenant> {
  const id = (await t.call(key, "GET", "/v1/auth/session")).json().tenant_id;
  const issued = await t.call(key, "POST", "/v1/nats/monitoring-credentials", { ttl_days: 1 });
  expect(issued.statusCode, issued.body).toBe(201);
  const created = await t.call(key, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.7", asn: 65010 });
  expect(created.statusCode, created.body).toBe(201);
  const enrolled = await t.call(created.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: `${name}.example`, agent_version: "1.0.0" });
  expect(enrolled.statusCode, enrolled.body).toBe(201);
  const e = enrolled.json();
  return { id, key, monitoring: issued.json(), speaker: { id: e.speaker_id, nodeKey: e.api_key, creds: e.nats_credentials } };
}

/** An event of the tenant's (a status report), so its stream has something a consumer could deliver. */
async function report(x: Tenant) {
  const r = await t.call(x.speaker.nodeKey, "POST", `/v1/speakers/${x.speaker.id}/status`, { speaker_id: x.speaker.id, reason: "started", sessions: [] });
  expect(r.statusCode, r.body).toBe(204);
}

async function streamMessages(x: Tenant): Promise<number> {
  const nc = await connectAs(x.monitoring.creds, x.monitoring.inbox_prefix);
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  return (await jsm.streams.info(x.monitoring.stream)).state.messages;
}

const settle = () => new Promise((r) => setTimeout(r, 1500));

describe.skipIf(!natsServer.available)("NATS: one account per tenant", () => {
  beforeAll(async () => {
    nats = await startSecuredNats();
    t = await startLiveController({ env: nats.controllerEnv });
    a = await tenant(t.rootKey, "edge-a");
    const made = await t.call(t.rootKey, "POST", "/v1/tenants", { name: "isolated-b" });
    expect(made.statusCode, made.body).toBe(201);
    b = await tenant(made.json().admin_key.secret, "edge-b");
    await report(a);
    await report(b);
    await until("both streams", async () => (await streamMessages(a).catch(() => 0)) > 0 && (await streamMessages(b).catch(() => 0)) > 0);
  }, 60_000);
  afterAll(async () => {
    for (const nc of connections) await nc.close().catch(() => {});
    await t?.close();
    await nats?.stop();
  });

  it("each tenant's users live in an account of its own, not the controller's", () => {
    expect(a.monitoring.account).toMatch(/^A/);
    expect(b.monitoring.account).toMatch(/^A/);
    expect(a.monitoring.account).not.toBe(b.monitoring.account);
    expect(a.monitoring.stream).toBe(eventStreamName(a.id));
  });

  it("a monitoring user's consumer delivering to another tenant's agent subject delivers nothing there, even after it disconnects", async () => {
    const agentB = await connectAs(b.speaker.creds);
    const heardByB = await listen(agentB, internalSubjects.notify(b.id, b.speaker.id));
    const attacker = await connectAs(a.monitoring.creds, a.monitoring.inbox_prefix);
    const jsm = await jetstreamManager(attacker, { checkAPI: false });
    // What the attack used: explicit acks, a 1 s ack wait and unlimited redeliveries.
    await jsm.consumers.add(a.monitoring.stream, {
      durable_name: "forged-polls",
      deliver_subject: internalSubjects.notify(b.id, b.speaker.id),
      ack_policy: AckPolicy.Explicit,
      ack_wait: 1_000_000_000,
      max_deliver: -1,
      deliver_policy: DeliverPolicy.All,
    });
    await attacker.close();
    await report(a);
    await settle();
    expect(heardByB).toEqual([]);
    // The same consumer does deliver within A's own account: it ran, and went nowhere else.
    const own = await connectAs(a.monitoring.creds, a.monitoring.inbox_prefix);
    const ownJsm = await jetstreamManager(own, { checkAPI: false });
    const pushed = await listen(own, `${a.monitoring.inbox_prefix}.own`);
    await ownJsm.consumers.add(a.monitoring.stream, {
      deliver_subject: `${a.monitoring.inbox_prefix}.own`,
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.All,
    });
    await until("A's own deliveries", async () => pushed.length > 0);
  });

  it("a JetStream request with a foreign reply subject reaches no other tenant's history or subscribers, and none of the controller's subjects", async () => {
    const bWatcher = await connectAs(b.monitoring.creds, b.monitoring.inbox_prefix);
    const bLive = await listen(bWatcher, eventSubjects.tenant(b.id));
    const controller = await connectAs(await readFile(nats.init.files.controller_creds, "utf8"));
    const internal = [internalSubjects.lookupChanged(a.id), internalSubjects.lookupChanged(b.id), internalSubjects.jobsWake];
    const heardByController = (await Promise.all(internal.map((s) => listen(controller, s)))).flat();
    const agentB = await connectAs(b.speaker.creds);
    const heardByAgentB = await listen(agentB, internalSubjects.notify(b.id, b.speaker.id));
    const before = await streamMessages(b);

    const attacker = await connectAs(a.monitoring.creds, a.monitoring.inbox_prefix);
    const api = `$JS.API.STREAM.INFO.${a.monitoring.stream}`;
    for (const reply of [eventSubjects.status(b.id, b.speaker.id), internalSubjects.notify(b.id, b.speaker.id), ...internal]) {
      for (let i = 0; i < 3; i++) attacker.publish(api, "", { reply });
    }
    await attacker.flush();
    await settle();
    expect(bLive).toEqual([]);
    expect(heardByController).toEqual([]);
    expect(heardByAgentB).toEqual([]);
    expect(await streamMessages(b)).toBe(before);
  });

  it("an agent acts only on wake-ups the controller signed: a JetStream delivery or an answer made to look like one on its own subject is ignored", async () => {
    const keys = (await t.call(a.speaker.nodeKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    const woken: (AgentNotification | null)[] = [];
    const clock = createSystemClock();
    const wakeups = startNatsWakeups({
      url: nats.url,
      creds: a.speaker.creds,
      tenantId: a.id,
      speakerId: a.speaker.id,
      clock,
      log: silentLogger,
      onWake: (n) => woken.push(n),
      accept: async (value) => {
        const checked = verifyNotification(value, { tenantId: a.id, speakerId: a.speaker.id, keys, now: clock.now() });
        return checked.ok ? notificationFromJson(checked.body) : null;
      },
    });
    try {
      // Subscribed once a signed live poll gets through.
      await until("the agent's subscription", async () => {
        await t.call(t.rootKey, "GET", "/v1/speakers?live=true&live_timeout_ms=300");
        return woken.some((n) => n?.type === "live_poll");
      });
      await new Promise((r) => setTimeout(r, 2100)); // past the live-poll coalescing window
      woken.length = 0;
      // From a user of the same account: a consumer delivering onto the agent's subject, and
      // JetStream answers sent there as replies.
      const insider = await connectAs(a.monitoring.creds, a.monitoring.inbox_prefix);
      const jsm = await jetstreamManager(insider, { checkAPI: false });
      await jsm.consumers.add(a.monitoring.stream, {
        deliver_subject: internalSubjects.notify(a.id, a.speaker.id),
        ack_policy: AckPolicy.Explicit,
        ack_wait: 1_000_000_000,
        max_deliver: -1,
        deliver_policy: DeliverPolicy.All,
      });
      for (let i = 0; i < 3; i++) insider.publish(`$JS.API.STREAM.INFO.${a.monitoring.stream}`, "", { reply: internalSubjects.notify(a.id, a.speaker.id) });
      await insider.flush();
      await settle();
      expect(woken).toEqual([]);
      // A real poll still wakes it.
      await t.call(t.rootKey, "GET", "/v1/speakers?live=true&live_timeout_ms=300");
      await until("the signed live poll", async () => woken.some((n) => n?.type === "live_poll"));
      expect(woken.every((n) => n?.type === "live_poll")).toBe(true);

      // Thirty viewers polling at once: the router is asked once (they share the poll).
      await new Promise((r) => setTimeout(r, 2100));
      woken.length = 0;
      const viewer = (await t.call(t.rootKey, "POST", "/v1/api-keys", { name: "viewer", role: "viewer" })).json().secret;
      await Promise.all(Array.from({ length: 30 }, () => t.call(viewer, "GET", "/v1/speakers?live=true&live_timeout_ms=500")));
      await settle();
      expect(woken.filter((n) => n?.type === "live_poll")).toHaveLength(1);
    } finally {
      await wakeups.close();
    }
  });
});
