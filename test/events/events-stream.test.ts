import { readFile } from "node:fs/promises";
import { AckPolicy, DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { EVENTS, eventStreamName, eventSubjects, parseEventSubject } from "@rlc/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadNatsTenantAuthority } from "../../packages/controller/src/bus/nats-tenants.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { type SecuredNats, startSecuredNats } from "../helpers/nats-secured.js";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

// A nats-server with JWT authentication (what `controller nats init` writes) and a controller
// with its credentials: the tenants' event streams, replayed by read-only monitoring users.
const natsServer = tool("nats-server");
const encoder = new TextEncoder();
let nats: SecuredNats;
let t: LiveController;
const connections: NatsConnection[] = [];
interface Tenant {
  id: string;
  key: string;
  monitoring: { creds: string; stream: string; inbox_prefix: string };
}
let a: Tenant;
let b: Tenant;

async function connectAs(creds: string, inboxPrefix?: string): Promise<NatsConnection & { errors: string[] }> {
  const nc = await connect({
    servers: nats.url,
    authenticator: credsAuthenticator(encoder.encode(creds)),
    reconnect: false,
    ...(inboxPrefix ? { inboxPrefix } : {}),
  });
  connections.push(nc);
  const errors: string[] = [];
  (async () => {
    for await (const s of nc.status()) if (s.type === "error") errors.push(String(s.error.message));
  })().catch(() => {});
  return Object.assign(nc, { errors });
}

/** Everything a tenant's stream holds, read as its monitoring user reads it (an ordered consumer from the start). */
async function replay(tenant: Tenant, stream = tenant.monitoring.stream): Promise<{ subject: string; data: any }[]> {
  const nc = await connectAs(tenant.monitoring.creds, tenant.monitoring.inbox_prefix);
  const consumer = await jetstream(nc).consumers.get(stream, { deliver_policy: DeliverPolicy.All });
  const out: { subject: string; data: any }[] = [];
  const pending = (await consumer.info(true)).num_pending;
  if (pending === 0) return out;
  for await (const m of await consumer.fetch({ max_messages: pending, expires: 5000 })) {
    out.push({ subject: m.subject, data: m.json() });
    if (out.length === pending) break;
  }
  return out;
}

async function enrollAndReport(key: string, name: string) {
  const created = await t.call(key, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.5", asn: 65010 });
  expect(created.statusCode, created.body).toBe(201);
  const enrolled = (await t.call(created.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: `${name}.example`, agent_version: "1.0.0" })).json();
  const session = { protocol: `rl_${name.replaceAll("-", "_")}`, peer_id: null, state: "up", bgp_state: "Established" };
  const reported = await t.call(enrolled.api_key, "POST", `/v1/speakers/${enrolled.speaker_id}/status`, {
    speaker_id: enrolled.speaker_id,
    reason: "started",
    sessions: [session],
  });
  expect(reported.statusCode, reported.body).toBe(204);
  return enrolled.speaker_id as string;
}

async function tenant(key: string): Promise<Tenant> {
  const id = (await t.call(key, "GET", "/v1/auth/session")).json().tenant_id;
  const issued = await t.call(key, "POST", "/v1/nats/monitoring-credentials", { ttl_days: 1 });
  expect(issued.statusCode, issued.body).toBe(201);
  return { id, key, monitoring: issued.json() };
}

describe.skipIf(!natsServer.available)("event history: one JetStream stream per tenant, read by monitoring users", () => {
  beforeAll(async () => {
    nats = await startSecuredNats();
    t = await startLiveController({
      env: { ...nats.controllerEnv, NATS_EVENTS_MAX_AGE_SECONDS: "7200" },
    });
    a = await tenant(t.rootKey);
    const made = await t.call(t.rootKey, "POST", "/v1/tenants", { name: "events-b" });
    expect(made.statusCode, made.body).toBe(201);
    b = await tenant(made.json().admin_key.secret);
  }, 60_000);
  afterAll(async () => {
    for (const nc of connections) await nc.close().catch(() => {});
    await t?.close();
    await nats?.stop();
  });

  it("a monitoring user replays its tenant's events from the stream, with valid payloads", async () => {
    const speakerId = await enrollAndReport(a.key, "edge-replay");
    const mod = (await t.call(a.key, "POST", "/v1/modules", { name: "replay", type: "IP_RANGES" })).json();
    await t.call(a.key, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.7.0.0/16" });
    const refreshed = await t.call(a.key, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const jobId = refreshed.json().job_id;

    // Read after the fact: the events were published before anyone listened.
    const events = await until("the job's end in the stream", async () => {
      const got = await replay(a);
      return got.some((m) => m.subject === eventSubjects.jobFinished(a.id, jobId)) ? got : null;
    });
    const kinds = new Set(events.map((m) => parseEventSubject(m.subject)?.kind));
    expect([...kinds].sort()).toEqual(["job_finished", "revision_created", "session", "status"]);
    for (const m of events) {
      const parsed = parseEventSubject(m.subject)!;
      expect(parsed.tenantId).toBe(a.id);
      expect(EVENTS[parsed.kind].schema.safeParse(m.data).success, m.subject).toBe(true);
    }
    expect(events.find((m) => m.subject === eventSubjects.session(a.id, speakerId))?.data).toMatchObject({ previous: null, current: { state: "up" } });
  });

  it("the stream lives in the tenant's account, bounded (size cap, oldest dropped, message cap), kept NATS_EVENTS_MAX_AGE_SECONDS, and is made or brought to it idempotently", async () => {
    // The controller's own account holds no stream: the tenant's is in the tenant's account.
    const controller = await connectAs(await readFile(nats.init.files.controller_creds, "utf8"));
    await expect(jetstreamManager(controller)).rejects.toThrow();
    const dashboard = await connectAs(a.monitoring.creds, a.monitoring.inbox_prefix);
    const jsm = await jetstreamManager(dashboard, { checkAPI: false });
    const info = await jsm.streams.info(eventStreamName(a.id));
    expect(info.config).toMatchObject({
      subjects: [`rl.v1.${a.id}.>`],
      max_age: 7200 * 1e9,
      max_bytes: 64 * 1024 * 1024,
      max_msg_size: 128 * 1024,
      discard: DiscardPolicy.Old,
    });
    const authority = await loadNatsTenantAuthority({
      url: nats.url,
      operatorSeedFile: nats.init.files.operator_signing_seed,
      controllerCredsFile: nats.init.files.controller_creds,
      systemCredsFile: nats.init.files.system_creds,
      limits: { maxConnections: 100, storageBytes: 256 * 1024 * 1024 },
    });
    try {
      const spec = {
        name: eventStreamName(a.id),
        subjects: [eventSubjects.tenant(a.id)],
        maxAgeSeconds: 7200,
        maxBytes: 64 * 1024 * 1024,
        maxMsgBytes: 128 * 1024,
        replicas: 1,
        description: "x",
      };
      expect(await authority.ensureStream(a.id, spec)).toBe("unchanged");
      expect(await authority.ensureStream(a.id, { ...spec, maxAgeSeconds: 3600 })).toBe("updated");
      expect((await jsm.streams.info(eventStreamName(a.id))).config.max_age).toBe(3600 * 1e9);
      expect(await authority.ensureStream(a.id, { ...spec, maxAgeSeconds: 3600 })).toBe("unchanged");
      // A stream past the account's storage is refused by NATS itself.
      await expect(authority.ensureStream(a.id, { ...spec, maxBytes: 1024 * 1024 * 1024 })).rejects.toThrow();
    } finally {
      await authority.close();
    }
    // The messages kept survive the update.
    expect((await jsm.streams.info(eventStreamName(a.id))).state.messages).toBeGreaterThan(0);
  });

  it("a monitoring user publishes nothing: no event reaches subscribers or the stream", async () => {
    const before = (await replay(a)).length;
    const dashboard = await connectAs(a.monitoring.creds, a.monitoring.inbox_prefix);
    const forged = eventSubjects.jobFinished(a.id, "forged");
    dashboard.publish(forged, JSON.stringify({ forged: true }));
    await dashboard.flush();
    await until("the permission violation", async () => dashboard.errors.some((e) => /Permissions Violation for Publish/.test(e)));
    const after = await replay(a);
    expect(after.length).toBe(before);
    expect(after.some((m) => m.subject === forged)).toBe(false);
  });

  it("tenant B's monitoring user sees nothing of tenant A: not live, not from A's stream, not by a consumer that delivers elsewhere", async () => {
    await enrollAndReport(b.key, "edge-b");
    const own = await until("B's own events", async () => {
      // B's stream is made with B's first event, a moment after the report that caused it.
      const got = await replay(b).catch(() => []);
      return got.length ? got : null;
    });
    expect(own.every((m) => parseEventSubject(m.subject)?.tenantId === b.id)).toBe(true);

    // A's stream: making a consumer there is refused.
    const intruder = await connectAs(b.monitoring.creds, b.monitoring.inbox_prefix);
    await expect(jetstream(intruder, { timeout: 2000 }).consumers.get(a.monitoring.stream)).rejects.toThrow();
    await expect(replay(b, a.monitoring.stream)).rejects.toThrow();

    // A push consumer of B's own stream told to deliver onto A's subjects must not put B's
    // events into A's stream (or before A's subscribers).
    const beforeA = (await replay(a)).length;
    const live: string[] = [];
    const watcher = await connectAs(a.monitoring.creds, a.monitoring.inbox_prefix);
    watcher.subscribe(eventSubjects.tenant(a.id), { callback: (_e, m) => void live.push(m.subject) });
    await watcher.flush();
    const jsm = await jetstreamManager(intruder, { checkAPI: false });
    const made = await jsm.consumers
      .add(b.monitoring.stream, { deliver_subject: eventSubjects.jobFinished(a.id, "smuggled"), ack_policy: AckPolicy.None, deliver_policy: DeliverPolicy.All })
      .then(
        () => "created",
        (error: Error) => error.message,
      );
    await new Promise((r) => setTimeout(r, 500));
    const afterA = await replay(a);
    expect(
      afterA.some((m) => m.subject === eventSubjects.jobFinished(a.id, "smuggled")),
      `consumer: ${made}`,
    ).toBe(false);
    expect(afterA.length).toBe(beforeA);
    expect(
      live.filter((x) => x.endsWith(".smuggled.finished")),
      `consumer: ${made}`,
    ).toEqual([]);
    // The same consumer delivering to B's own inbox does deliver: the one above was held back, not slow.
    const pushed: string[] = [];
    intruder.subscribe(`${b.monitoring.inbox_prefix}.push`, { callback: (_e, m) => void pushed.push(m.subject) });
    await intruder.flush();
    await jsm.consumers.add(b.monitoring.stream, {
      deliver_subject: `${b.monitoring.inbox_prefix}.push`,
      ack_policy: AckPolicy.None,
      deliver_policy: DeliverPolicy.All,
    });
    await until("B's own push deliveries", async () => pushed.length > 0);
    expect(pushed.every((x) => parseEventSubject(x)?.tenantId === b.id)).toBe(true);
  });
});
