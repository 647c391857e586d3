import { internalSubjects } from "@rlc/proto";
import { type SigningKeyPair, signNotification } from "@rlc/shared/bundle";
import type { Bus } from "../../bus/index.js";
import type { Sql } from "../../db/connect.js";
import type { SigningService } from "./signing.js";

/** How long a tenant's active signing key is reused before it is read again (a rotation is seen within this). */
const KEY_CACHE_MS = 10_000;

export type AgentWakeup = { type: "new_revision"; revision_id: number; digest: string; sequence: number } | { type: "live_poll"; poll_id: string };

/**
 * Wakes one agent (a new revision, a live poll) on its notify subject, signed by the tenant's
 * bundle signing key: on NATS the agent acts only on a notification that verifies against the
 * keys it pinned, whatever else its subject carries. The gRPC Watch stream relays the same
 * notification to an agent connected to this or any other replica.
 */
export function createAgentNotifier(deps: { bus: Bus; sql: Sql; signing: SigningService; now: () => Date }) {
  const keys = new Map<string, { key: Promise<SigningKeyPair>; until: number }>();
  const keyOf = (tenantId: string) => {
    const at = Date.now();
    let k = keys.get(tenantId);
    if (!k || k.until <= at) {
      k = { key: deps.signing.activeKey(deps.sql, tenantId), until: at + KEY_CACHE_MS };
      k.key.catch(() => keys.delete(tenantId));
      keys.set(tenantId, k);
    }
    return k.key;
  };
  return {
    /** Best effort, like every wake-up: the desired state is in the database and the agents also poll. */
    async notify(tenantId: string, speakerId: string, wakeup: AgentWakeup): Promise<void> {
      const signed = await signNotification(await keyOf(tenantId), { ...wakeup, tenant_id: tenantId, speaker_id: speakerId }, deps.now());
      deps.bus.publish(internalSubjects.notify(tenantId, speakerId), signed);
    },
  };
}

export type AgentNotifier = ReturnType<typeof createAgentNotifier>;
