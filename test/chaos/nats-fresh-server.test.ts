import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { type SecuredNats, startSecuredNats } from "../helpers/nats-secured.js";
import { type NatsTenantProbe, startNatsTenantProbe } from "../helpers/nats-tenant-probe.js";
import { tool } from "../helpers/tools.js";
import { until } from "../helpers/wait.js";

// The NATS server replaced by a new one on the same address (its store and resolver directory
// lost: a server rebuilt, a volume not kept): the controller reconnects, and must give the new
// server what the old one held — the tenant's account (without it the tenant's agents and
// monitoring users cannot sign in) and its event stream — without a restart of its own.
const natsServer = tool("nats-server");

describe.skipIf(!natsServer.available)("NATS replaced by a fresh server", () => {
  let nats: SecuredNats;
  let t: LiveController;
  let probe: NatsTenantProbe;

  beforeAll(async () => {
    nats = await startSecuredNats();
    t = await startLiveController({ env: nats.controllerEnv });
    probe = await startNatsTenantProbe(t, [nats.url], "edge-f");
    await probe.wakeReaches("the first wake-up");
  }, 60_000);
  afterAll(async () => {
    await probe?.close();
    await t?.close();
    await nats?.stop();
  });

  it("the tenant's account and event stream are on the new server again, its agent woken and its monitoring user reading events, with no controller restart", {
    timeout: 150_000,
  }, async () => {
    await probe.reportUntilKept("the first event in the stream", 0);

    // The new server knows neither the tenant's account nor its stream.
    await nats.restart({ wipe: true });
    await until("the controller's bus back", async () => (await t.call(null, "GET", "/v1/ready")).json().checks?.nats === "ok", 40_000);
    await probe.wakeReaches("a wake-up through the new server");
    await probe.reportUntilKept("an event kept by the new server", 0);
    expect(await probe.streamMessages()).toBeGreaterThan(0);
  });
});
