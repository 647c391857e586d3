import { jetstreamManager, type StreamInfo } from "@nats-io/jetstream";
import { connect, credsAuthenticator } from "@nats-io/transport-node";
import { type AgentNotification, notificationFromJson } from "@rlc/proto";
import { verifyNotification } from "@rlc/shared/bundle";
import { createSystemClock } from "@rlc/shared/time";
import { expect } from "vitest";
import { startNatsWakeups } from "../../packages/agent/src/bundle/nats-wakeups.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import type { LiveController } from "./live-controller.js";
import { until } from "./wait.js";

/**
 * What a tenant sees of a controller's NATS, for the chaos tests that take NATS away: an
 * enrolled speaker whose agent's NATS wake-ups are running, and the tenant's monitoring user
 * reading its event stream.
 */
export interface NatsTenantProbe {
  /** The stream as the monitoring user reads it (throws while the user cannot sign in or there is no stream). */
  streamInfo(): Promise<StreamInfo>;
  /** The stream's message count; 0 while it cannot be read. */
  streamMessages(): Promise<number>;
  /** Reports the speaker's status (an event) until the stream holds more than `above` events. */
  reportUntilKept(what: string, above: number): Promise<void>;
  /** Asks for a live poll until one reaches the agent's NATS subscription. */
  wakeReaches(what: string): Promise<void>;
  close(): Promise<void>;
}

export async function startNatsTenantProbe(t: LiveController, urls: string[], name: string): Promise<NatsTenantProbe> {
  const created = await t.call(t.rootKey, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.60", asn: 65010 });
  const enrolled = (await t.call(created.json().enrollment_token, "POST", "/v1/nodes/enroll", { hostname: `${name}.example`, agent_version: "1.0.0" })).json();
  const speaker = { id: enrolled.speaker_id as string, tenantId: enrolled.tenant_id as string, nodeKey: enrolled.api_key as string };
  const monitoring = (await t.call(t.rootKey, "POST", "/v1/nats/monitoring-credentials", { ttl_days: 1 })).json();
  const keys = (await t.call(speaker.nodeKey, "GET", "/v1/nodes/signing-keys")).json().keys;
  const clock = createSystemClock();
  const woken: (AgentNotification | null)[] = [];
  const wakeups = startNatsWakeups({
    url: urls.join(","),
    creds: enrolled.nats_credentials,
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

  const streamInfo = async () => {
    const nc = await connect({
      servers: urls,
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
  const streamMessages = async () => (await streamInfo().catch(() => null))?.state.messages ?? 0;
  const report = async () => {
    await new Promise((r) => setTimeout(r, 600)); // within the speaker's report rate
    const r = await t.call(speaker.nodeKey, "POST", `/v1/speakers/${speaker.id}/status`, { speaker_id: speaker.id, reason: "sessions_changed", sessions: [] });
    expect(r.statusCode, r.body).toBe(204);
  };
  return {
    streamInfo,
    streamMessages,
    // An event is published live and kept only once the stream has a leader: one written while
    // the replicas still elect one (just after the stream is made, or a node or the cluster
    // went) is seen live only, so the next report counts.
    reportUntilKept: async (what, above) => {
      await until(
        what,
        async () => {
          await report();
          await new Promise((r) => setTimeout(r, 500));
          return (await streamMessages()) > above;
        },
        40_000,
      );
    },
    wakeReaches: async (what) => {
      await until(
        what,
        async () => {
          const before = woken.length;
          await t.call(t.rootKey, "GET", "/v1/speakers?live=true&live_timeout_ms=300");
          await new Promise((r) => setTimeout(r, 200));
          return woken.slice(before).some((n) => n?.type === "live_poll");
        },
        40_000,
      );
    },
    close: () => wakeups.close(),
  };
}
