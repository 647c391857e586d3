import { jetstreamManager } from "@nats-io/jetstream";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { type AgentNotification, notificationFromJson } from "@rlc/proto";
import { verifyNotification } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startNatsWakeups } from "../../packages/agent/src/bundle/nats-wakeups.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { type SecuredNats, startSecuredNats } from "../helpers/nats-secured.js";
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
  let speaker: { id: string; tenantId: string; nodeKey: string; creds: string };
  let monitoring: { creds: string; stream: string; inbox_prefix: string };
  const woken: (AgentNotification | null)[] = [];
  let wakeups: { close(): Promise<void> };

  /** The tenant's stream as its monitoring user reads it; 0 while the user cannot sign in or the stream is missing. */
  const streamMessages = async (): Promise<number> => {
    const nc = await connect({
      servers: nats.url,
      authenticator: credsAuthenticator(new TextEncoder().encode(monitoring.creds)),
      inboxPrefix: monitoring.inbox_prefix,
      reconnect: false,
    });
    try {
      return (await (await jetstreamManager(nc, { checkAPI: false })).streams.info(monitoring.stream)).state.messages;
    } finally {
      await nc.close();
    }
  };
  const report = async () => {
    await new Promise((r) => setTimeout(r, 600)); // within the speaker's report rate
    const r = await t.call(speaker.nodeKey, "POST", `/v1/speakers/${speaker.id}/status`, { speaker_id: speaker.id, reason: "sessions_changed", sessions: [] });
    expect(r.statusCode, r.body).toBe(204);
  };
  const reportUntilKept = (what: string) =>
    until(
      what,
      async () => {
        await report();
        return (await streamMessages().catch(() => 0)) > 0;
      },
      40_000,
    );
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
    nats = await startSecuredNats();
    t = await startLiveController({ env: nats.controllerEnv });
    const created = await t.call(t.rootKey, "POST", "/v1/speakers", { name: "edge-f", mode: "remote", router_id: "192.0.2.61", asn: 65010 });
    const enrolled = (await t.call(created.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "f.example", agent_version: "1.0.0" })).json();
    speaker = { id: enrolled.speaker_id, tenantId: enrolled.tenant_id, nodeKey: enrolled.api_key, creds: enrolled.nats_credentials };
    monitoring = (await t.call(t.rootKey, "POST", "/v1/nats/monitoring-credentials", { ttl_days: 1 })).json();
    const keys = (await t.call(speaker.nodeKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    const clock = createSystemClock();
    wakeups = startNatsWakeups({
      url: nats.url,
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
  }, 60_000);
  afterAll(async () => {
    await wakeups?.close();
    await t?.close();
    await nats?.stop();
  });

  it("the tenant's account and event stream are on the new server again, its agent woken and its monitoring user reading events, with no controller restart", {
    timeout: 150_000,
  }, async () => {
    await reportUntilKept("the first event in the stream");

    await nats.restart({ wipe: true });
    // The new server knows neither the tenant's account nor its stream.
    await until("the controller's bus back", async () => (await t.call(null, "GET", "/v1/ready")).json().checks?.nats === "ok", 40_000);
    await wakeReaches("a wake-up through the new server");
    await reportUntilKept("an event kept by the new server");
    expect(await streamMessages()).toBeGreaterThan(0);
  });
});
