import { readFile } from "node:fs/promises";
import { connect, credsAuthenticator, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { eventSubjects, internalSubjects, notificationFromJson } from "@rlc/proto";
import { verifyNotification } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import type { InjectOptions } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsWakeups } from "../../packages/agent/src/bundle/nats-wakeups.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { agentClient, enroll as grpcEnroll } from "../helpers/agent-grpc.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { type SecuredNats, startSecuredNats } from "../helpers/nats-secured.js";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

const natsServer = tool("nats-server");
const codec = { encode: (v: unknown) => JSON.stringify(v), decode: (d: Uint8Array) => JSON.parse(new TextDecoder().decode(d)) };
const encoder = new TextEncoder();

interface Enrolled {
  speakerId: string;
  tenantId: string;
  nodeKey: string;
  creds: string;
}

let nats: SecuredNats;
let t: LiveController;
const api = (key: string | null, o: { method: InjectOptions["method"]; url: string; payload?: object }) => t.call(key, o.method, o.url, o.payload);
let tenantB: { adminKey: string };
let a: Enrolled;
let b: Enrolled;
let c: Enrolled; // tenant B's speaker
const connections: NatsConnection[] = [];

async function connectAs(creds: string): Promise<NatsConnection & { errors: string[] }> {
  const nc = await connect({ servers: nats.url, authenticator: credsAuthenticator(encoder.encode(creds)), reconnect: false });
  connections.push(nc);
  const errors: string[] = [];
  (async () => {
    for await (const s of nc.status()) if (s.type === "error") errors.push(s.error.name);
  })().catch(() => {});
  return Object.assign(nc, { errors });
}

/** The server's answer to a subscription: null once it is in place, else the refusal. */
async function trySubscribe(
  nc: NatsConnection,
  subject: string,
  sink: { subject: string; data: unknown }[] = [],
): Promise<{ sub: Subscription; refused: string | null }> {
  let refused: string | null = null;
  const sub = nc.subscribe(subject, {
    callback: (err, msg) => {
      if (err) refused = err.message;
      else sink.push({ subject: msg.subject, data: codec.decode(msg.data) });
    },
  });
  // A PING round trip: the server has handled the SUB (and sent any -ERR) before the PONG.
  await nc.flush();
  await new Promise((r) => setTimeout(r, 50));
  return { sub, refused };
}

async function enrollSpeaker(key: string, name: string, routerId: string): Promise<Enrolled> {
  const created = await api(key, { method: "POST", url: "/v1/speakers", payload: { name, mode: "remote", router_id: routerId, asn: 65010 } });
  expect(created.statusCode, created.body).toBe(201);
  const enrolled = await api(created.json().enrollment_token, {
    method: "POST",
    url: "/v1/nodes/enroll",
    payload: { hostname: `${name}.example`, agent_version: "1.0.0" },
  });
  expect(enrolled.statusCode, enrolled.body).toBe(201);
  const body = enrolled.json();
  expect(body.nats_url).toBe(nats.url);
  expect(body.nats_credentials).toMatch(/-----BEGIN NATS USER JWT-----[\s\S]+-----BEGIN USER NKEY SEED-----/);
  return { speakerId: body.speaker_id, tenantId: body.tenant_id, nodeKey: body.api_key, creds: body.nats_credentials };
}

const notify = (e: Enrolled) => internalSubjects.notify(e.tenantId, e.speakerId);
const status = (e: Enrolled) => eventSubjects.status(e.tenantId, e.speakerId);

describe.skipIf(!natsServer.available)("NATS with per-agent credentials (a nats-server trusting the controller's operator)", () => {
  beforeAll(async () => {
    nats = await startSecuredNats();
    t = await startLiveController({
      env: nats.controllerEnv,
    });
    const tenant = await api(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "other" } });
    expect(tenant.statusCode, tenant.body).toBe(201);
    tenantB = { adminKey: tenant.json().admin_key.secret };
    a = await enrollSpeaker(t.rootKey, "edge-a", "192.0.2.1");
    b = await enrollSpeaker(t.rootKey, "edge-b", "192.0.2.2");
    c = await enrollSpeaker(tenantB.adminKey, "edge-c", "192.0.2.3");
  }, 30_000);
  afterAll(async () => {
    for (const nc of connections) await nc.close().catch(() => {});
    await t?.close();
    await nats?.stop();
  });

  it("refuses a connection without credentials", async () => {
    await expect(connect({ servers: nats.url, reconnect: false })).rejects.toThrow(/authorization/i);
  });

  it("an agent's credentials subscribe only to its own speaker's notify subject", async () => {
    const agent = await connectAs(a.creds);
    expect((await trySubscribe(agent, notify(a))).refused).toBeNull();
    expect((await trySubscribe(agent, notify(b))).refused).toMatch(/Permissions Violation for Subscription to "rl\..+\.notify"/);
    expect((await trySubscribe(agent, notify(c))).refused).toMatch(/Permissions Violation/);
    expect((await trySubscribe(agent, `rl.${c.tenantId}.>`)).refused).toMatch(/Permissions Violation/);
    expect((await trySubscribe(agent, status(b))).refused).toMatch(/Permissions Violation/);
    expect((await trySubscribe(agent, "rl.>")).refused).toMatch(/Permissions Violation/);
  });

  it("an agent's credentials publish nothing: not its own status event (the controller publishes what it recorded), not another's, no wake-up", async () => {
    const controller = await connectAs(await readFile(nats.init.files.controller_creds, "utf8"));
    const seen: { subject: string; data: unknown }[] = [];
    expect((await trySubscribe(controller, "rl.>", seen)).refused).toBeNull();
    const agent = await connectAs(a.creds);
    const marker = internalSubjects.lookupChanged(a.tenantId);
    const tried = [status(b), status(c), notify(b), status(a), eventSubjects.jobFinished(a.tenantId, "j1"), marker];
    agent.publish(status(b), codec.encode({ speaker_id: b.speakerId, forged: true }));
    agent.publish(status(c), codec.encode({ speaker_id: c.speakerId, forged: true }));
    agent.publish(notify(b), codec.encode({ type: "new_revision", forged: true }));
    agent.publish(status(a), codec.encode({ speaker_id: a.speakerId, own: true }));
    agent.publish(eventSubjects.jobFinished(a.tenantId, "j1"), codec.encode({ forged: true }));
    await agent.flush();
    await until("the agent's permission errors", async () => agent.errors.includes("PermissionViolationError"));
    // The controller's own publish after the agent's: once it arrives, anything the agent's got through would have too.
    controller.publish(marker, codec.encode({}));
    await until("the controller's marker", async () => seen.some((m) => m.subject === marker));
    expect(seen.map((m) => m.subject).filter((s) => tried.includes(s))).toEqual([marker]);
  });

  it("a forged live-poll answer is never taken: not on another speaker's subject, not with another speaker's poll_id", async () => {
    // The eavesdropper here holds the controller's view of the notify subjects, so it knows
    // every poll_id: more than any agent can see. Agents publish nothing at all now; the
    // answers below are refused by the server, and were they not, by the subject check.
    const observer = await connectAs(await readFile(nats.init.files.controller_creds, "utf8"));
    const notes: { subject: string; data: unknown }[] = [];
    await trySubscribe(observer, internalSubjects.notify(a.tenantId, "*"), notes);
    const agentB = await connectAs(b.creds);
    const live = api(t.rootKey, { method: "GET", url: "/v1/speakers?live=true&live_timeout_ms=1500" });
    await until("the condition", async () => notes.some((n) => n.subject === notify(a)));
    const pollA = (notes.find((n) => n.subject === notify(a))!.data as { poll_id: string }).poll_id;
    const forged = { speaker_id: a.speakerId, reason: "live_poll", poll_id: pollA, bird: { reachable: true, version: "forged" }, sessions: [] };
    agentB.publish(status(b), codec.encode(forged)); // on its own subject, claiming to be A
    agentB.publish(status(a), codec.encode(forged)); // on A's subject: the server drops it
    await agentB.flush();
    const answer = (await live).json();
    const speakerA = answer.items.find((s: { id: string }) => s.id === a.speakerId);
    expect(speakerA.live).toMatchObject({ reachable: false, stale: true });
    expect(answer.polls.find((p: { speaker_id: string }) => p.speaker_id === a.speakerId)).toMatchObject({ ok: false });
    expect(answer.polls.find((p: { speaker_id: string }) => p.speaker_id === b.speakerId)).toMatchObject({ ok: false });
  });

  it("the controller with its credentials runs the whole flow: notify to the agent's own subscription, status back, live poll answered", async () => {
    const woken: unknown[] = [];
    const keys = (await api(a.nodeKey, { method: "GET", url: "/v1/nodes/signing-keys" })).json().keys;
    const clock = createSystemClock();
    const wakeups = startNatsWakeups({
      url: nats.url,
      creds: a.creds,
      tenantId: a.tenantId,
      speakerId: a.speakerId,
      clock,
      log: silentLogger,
      accept: async (value) => {
        const checked = verifyNotification(value, { tenantId: a.tenantId, speakerId: a.speakerId, keys, now: clock.now() });
        return checked.ok ? notificationFromJson(checked.body) : null;
      },
      onWake: (n) => {
        woken.push(n);
        if (n?.type !== "live_poll") return;
        void api(a.nodeKey, {
          method: "POST",
          url: `/v1/speakers/${a.speakerId}/status`,
          payload: { speaker_id: a.speakerId, reason: "live_poll", poll_id: n.poll_id, bird: { reachable: true, version: "2.15" }, sessions: [] },
        });
      },
    });
    try {
      const dashboardCreds = await api(t.rootKey, { method: "POST", url: "/v1/nats/monitoring-credentials", payload: { ttl_days: 1 } });
      expect(dashboardCreds.statusCode, dashboardCreds.body).toBe(201);
      const dashboard = await connectAs(dashboardCreds.json().creds);
      const seen: { subject: string; data: unknown }[] = [];
      expect((await trySubscribe(dashboard, eventSubjects.status(a.tenantId, "*"), seen)).refused).toBeNull();
      // The agent subscribes once connected: ask again until it has.
      let answer: any;
      for (let i = 0; i < 10; i++) {
        answer = (await api(t.rootKey, { method: "GET", url: "/v1/speakers?live=true&live_timeout_ms=1000" })).json();
        if (answer.items.find((s: { id: string }) => s.id === a.speakerId).live.reachable) break;
      }
      expect(answer.items.find((s: { id: string }) => s.id === a.speakerId).live).toMatchObject({ reachable: true, stale: false, bird: { version: "2.15" } });
      expect(woken).toContainEqual(expect.objectContaining({ type: "live_poll" }));
      await until("the condition", async () => seen.some((m) => m.subject === status(a)));
      expect(seen[0]?.data).toMatchObject({ speaker_id: a.speakerId, reason: "live_poll" });
    } finally {
      await wakeups.close();
    }
  });

  it("gRPC Enroll hands out the same kind of credentials: this speaker's subjects only", async () => {
    const created = await api(t.rootKey, {
      method: "POST",
      url: "/v1/speakers",
      payload: { name: "edge-g", mode: "remote", router_id: "192.0.2.9", asn: 65010 },
    });
    const client = agentClient(t.grpcAddress, t.grpcCredentials);
    try {
      const answer = await grpcEnroll(client, created.json().enrollment_token, "g.example");
      expect(answer.nats_credentials).toMatch(/-----BEGIN NATS USER JWT-----/);
      const g = { speakerId: answer.speaker_id, tenantId: answer.tenant_id, nodeKey: answer.api_key, creds: answer.nats_credentials };
      const agent = await connectAs(g.creds);
      expect((await trySubscribe(agent, notify(g))).refused).toBeNull();
      expect((await trySubscribe(agent, notify(a))).refused).toMatch(/Permissions Violation/);
    } finally {
      client.close();
    }
  });

  it("a monitoring user reads its own tenant's subjects only, and publishes nothing", async () => {
    const issued = await api(tenantB.adminKey, { method: "POST", url: "/v1/nats/monitoring-credentials", payload: {} });
    expect(issued.statusCode, issued.body).toBe(201);
    expect(issued.json()).toMatchObject({
      subscribe: [`rl.v1.${c.tenantId}.>`, `_INBOX_${c.tenantId}.>`],
      stream: `RL_EVENTS_V1_${c.tenantId}`,
      inbox_prefix: `_INBOX_${c.tenantId}`,
      user: expect.stringMatching(/^U/),
      account: expect.stringMatching(/^A/),
    });
    const dashboard = await connectAs(issued.json().creds);
    const seen: { subject: string; data: unknown }[] = [];
    expect((await trySubscribe(dashboard, eventSubjects.status(c.tenantId, "*"), seen)).refused).toBeNull();
    expect((await trySubscribe(dashboard, eventSubjects.status(a.tenantId, "*"))).refused).toMatch(/Permissions Violation/);
    expect((await trySubscribe(dashboard, notify(c))).refused).toMatch(/Permissions Violation/);
    expect((await trySubscribe(dashboard, "_INBOX.>")).refused).toMatch(/Permissions Violation/);
    expect((await trySubscribe(dashboard, `_INBOX_${a.tenantId}.>`)).refused).toMatch(/Permissions Violation/);
    expect((await trySubscribe(dashboard, "rl.>")).refused).toMatch(/Permissions Violation/);
    const report = await api(c.nodeKey, {
      method: "POST",
      url: `/v1/speakers/${c.speakerId}/status`,
      payload: { speaker_id: c.speakerId, reason: "sessions_changed", sessions: [] },
    });
    expect(report.statusCode, report.body).toBeLessThan(300);
    await until("the condition", async () => seen.some((m) => m.subject === status(c)));

    const controller = await connectAs(await readFile(nats.init.files.controller_creds, "utf8"));
    const heard: { subject: string; data: unknown }[] = [];
    for (const subject of [notify(c), status(c), eventSubjects.jobFinished(c.tenantId, "j1")]) await trySubscribe(controller, subject, heard);
    dashboard.publish(notify(c), codec.encode({ type: "new_revision", forged: true }));
    dashboard.publish(status(c), codec.encode({ forged: true }));
    dashboard.publish(eventSubjects.jobFinished(c.tenantId, "j1"), codec.encode({ forged: true }));
    await dashboard.flush();
    await new Promise((r) => setTimeout(r, 200));
    expect(heard).toEqual([]);
    expect(dashboard.errors).toContain("PermissionViolationError");

    // Monitoring credentials are an admin's to issue, and audited.
    const viewer = await api(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "v", role: "operator" } });
    expect((await api(viewer.json().secret, { method: "POST", url: "/v1/nats/monitoring-credentials", payload: {} })).statusCode).toBe(403);
    const audit = (await api(tenantB.adminKey, { method: "GET", url: "/v1/audit?resource_type=nats_user" })).json().items;
    expect(audit).toEqual([expect.objectContaining({ resource_id: issued.json().user, action: "create" })]);
    const seed = /-----BEGIN USER NKEY SEED-----\s+(\S+)/.exec(issued.json().creds)![1]!;
    expect(seed).toMatch(/^SU/);
    expect(JSON.stringify(audit)).not.toContain(seed); // no seed in the journal
  });
});

describe("NATS credentials without an account signing key", () => {
  let open: LiveController | null = null;
  afterAll(async () => open?.close());

  it("enrollment answers no credentials and monitoring credentials are 503 nats_credentials_unavailable", async () => {
    open = await startLiveController();
    const issued = await open.call(open.rootKey, "POST", "/v1/nats/monitoring-credentials", {});
    expect(issued.statusCode, issued.body).toBe(503);
    expect(issued.json()).toMatchObject({ code: "nats_credentials_unavailable" });
    const created = await open.call(open.rootKey, "POST", "/v1/speakers", { name: "edge-x", mode: "remote", router_id: "192.0.2.8", asn: 65010 });
    const enrolled = await open.call(created.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "x", agent_version: "1" });
    expect(enrolled.json()).toMatchObject({ nats_url: null, nats_credentials: null });
  });
});
