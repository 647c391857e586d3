import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { type NatsCluster, startNatsCluster } from "../helpers/nats-cluster.js";
import { type NatsTenantProbe, startNatsTenantProbe } from "../helpers/nats-tenant-probe.js";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

// A three-node NATS cluster (routes, JetStream with three replicas, accounts pushed to every
// node): one node killed and started again, then the whole cluster restarted. The controller and
// an agent's wake-ups reconnect by themselves; the tenant's event history keeps what it held.
// The controller starts right after the cluster, while JetStream may still elect its leader: the
// stream's first try can fail there, and is tried again with the next event.
const natsServer = tool("nats-server");

describe.skipIf(!natsServer.available)("NATS cluster: a node lost, then the whole cluster restarted", () => {
  let cluster: NatsCluster;
  let t: LiveController;
  let probe: NatsTenantProbe;

  beforeAll(async () => {
    cluster = await startNatsCluster();
    t = await startLiveController({ env: cluster.controllerEnv });
    probe = await startNatsTenantProbe(t, cluster.urls, "edge-n");
    await probe.wakeReaches("the first wake-up");
  }, 90_000);
  afterAll(async () => {
    await probe?.close();
    await t?.close();
    await cluster?.stop();
  });

  it("the stream has three replicas and keeps events through a lost node and a whole-cluster restart; wake-ups reach the agent after each", {
    timeout: 180_000,
  }, async () => {
    await probe.reportUntilKept("the first event in the stream", 0);
    expect((await probe.streamInfo()).config.num_replicas).toBe(3);

    await cluster.kill(0);
    await probe.wakeReaches("a wake-up with one node down");
    const beforeOne = await until("the stream with a node down", () => probe.streamMessages(), 20_000);
    await probe.reportUntilKept("an event written with a node down", beforeOne);
    await cluster.start(0);

    const kept = await until("the stream before the restart", () => probe.streamMessages(), 20_000);
    for (let i = 0; i < 3; i++) await cluster.kill(i);
    await Promise.all([0, 1, 2].map((i) => cluster.start(i)));
    await until("the controller's bus back", async () => (await t.call(null, "GET", "/v1/ready")).json().checks?.nats === "ok", 40_000);
    await probe.wakeReaches("a wake-up after the cluster restart");
    // Kept: every event from before the restart is read back (once the replicas have caught up).
    await until("the stream's events after the restart", async () => (await probe.streamMessages()) >= kept, 40_000);
    await probe.reportUntilKept("an event written after the restart", kept);
  });
});
