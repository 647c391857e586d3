import { jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
import { type AgentNotification, notificationFromJson } from "@rlc/proto";
import { verifyNotification } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsWakeups } from "../../packages/agent/src/bundle/nats-wakeups.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { type NatsCluster, startNatsCluster } from "../helpers/nats-cluster.js";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

// A three-node NATS cluster (routes, JetStream with three replicas, accounts pushed to every
// node): one node killed and started again, then the whole cluster restarted. The controller and
// an agent's wake-ups reconnect by themselves; the tenant's event history keeps what it held.
const natsServer = tool("nats-server");

describe.skipIf(!natsServer.available)("NATS cluster: a node lost, then the whole cluster restarted", () => {
  let cluster: NatsCluster;
  let t: LiveController;
  let speaker: { id: string; tenantId: string; nodeKey: string; creds: string };
  let monitoring: { creds: string; stream: string; inbox_prefix: string };
  const woken: (AgentNotification | null)[] = [];
  let wakeups: { close(): Promise<void> };

  const streamInfo = async () => {
    const nc: NatsConnection = await connect({
      servers: cluster.urls,
      authenticator: credsAuthenticator(new TextEncoder().encode(monitoring.creds)),
      inboxPrefix: monitoring.inbox_prefix,
      reconnect: false,
    });
    try {
      return await (await jetstreamManager(nc, { checkAPI: false })).streams.info(monitoring.stream);
    } finally {
      await nc.close();
    }
  };
  const streamMessages = async (): Promise<number> => (await streamInfo()).state.messages;
  const report = async () => {
    await new Promise((r) => setTimeout(r, 600)); // within the speaker's report rate
    const r = await t.call(speaker.nodeKey, "POST", `/v1/speakers/${speaker.id}/status`, { speaker_id: speaker.id, reason: "sessions_changed", sessions: [] });
    expect(r.statusCode, r.body).toBe(204);
  };
  /**
   * Reports until the stream holds more than `above` events. An event is published live and kept
   * only once the stream has a leader: one written while the replicas still elect one (just
   * after the stream is made, or a node or the cluster went) is seen live only, so the next
   * report counts.
   */
  const reportUntilKept = (what: string, above: number) =>
    until(
      what,
      async () => {
        await report();
        await new Promise((r) => setTimeout(r, 500));
        return (await streamMessages().catch(() => 0)) > above;
      },
      40_000,
    );
  /** A live poll reaches the agent's NATS subscription. */
  const wakeReaches = (what: string) =>
    until(
      what,
      async () => {
        const before = woken.length;
        await t.call(t.rootKey, "GET", "/v1/speakers?live=true&live_timeout_ms=300");
        await new Promise((r) => setTimeout(r, 200));
        return woken.slice(before).some((n) => n?.type === "live_poll");
      },
      40_000,
    );

  beforeAll(async () => {
    cluster = await startNatsCluster();
    t = await startLiveController({ env: cluster.controllerEnv });
    const created = await t.call(t.rootKey, "POST", "/v1/speakers", { name: "edge-n", mode: "remote", router_id: "192.0.2.60", asn: 65010 });
    const enrolled = (await t.call(created.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "n.example", agent_version: "1.0.0" })).json();
    speaker = { id: enrolled.speaker_id, tenantId: enrolled.tenant_id, nodeKey: enrolled.api_key, creds: enrolled.nats_credentials };
    monitoring = (await t.call(t.rootKey, "POST", "/v1/nats/monitoring-credentials", { ttl_days: 1 })).json();
    const keys = (await t.call(speaker.nodeKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    const clock = createSystemClock();
    wakeups = startNatsWakeups({
      url: cluster.urls.join(","),
      creds: speaker.creds,
      tenantId: speaker.tenantId,
      speakerId: speaker.id,
      clock,
      log: silentLogger,
      onWake: (n) => woken.push(n),
      accept: async (value) => {
        const checked = verifyNotification(value, { tenantId: speaker.tenantId, speakerId: speaker.id, keys, now: clock.now() });
        return checked.ok ? notificationFromJson(checked.body) : null;
      },
    });
    await wakeReaches("the first wake-up");
  }, 90_000);
  afterAll(async () => {
    await wakeups?.close();
    await t?.close();
    await cluster?.stop();
  });

  it("the stream has three replicas and keeps events through a lost node and a whole-cluster restart; wake-ups reach the agent after each", {
    timeout: 180_000,
  }, async () => {
    await reportUntilKept("the first event in the stream", 0);
    expect((await streamInfo()).config.num_replicas).toBe(3);

    await cluster.kill(0);
    await wakeReaches("a wake-up with one node down");
    const beforeOne = await until("the stream with a node down", () => streamMessages().catch(() => 0), 20_000);
    await reportUntilKept("an event written with a node down", beforeOne);
    await cluster.start(0);

    const kept = await until("the stream before the restart", () => streamMessages().catch(() => 0), 20_000);
    for (let i = 0; i < 3; i++) await cluster.kill(i);
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    await until("the controller's bus back", async () => (await t.call(null, "GET", "/v1/ready")).json().checks?.nats === "ok", 40_000);
    await wakeReaches("a wake-up after the cluster restart");
    // Kept: every event from before the restart is read back (once the replicas have caught up).
    await until("the stream's events after the restart", async () => (await streamMessages().catch(() => 0)) >= kept, 40_000);
    await reportUntilKept("an event written after the restart", kept);
  });
});
