import { eventStreamName, eventSubjects, parseEventSubject } from "@rlc/proto";
import type { Bus } from "../bus/index.js";

const RETRY_AFTER_FAILURE_MS = 60_000;

export interface EventHistoryOptions {
  /** How long a tenant's stream keeps events (NATS_EVENTS_MAX_AGE_SECONDS). */
  maxAgeSeconds: number;
  /** Told when a stream could not be created or updated (the events are still published). */
  onError: (tenantId: string, error: unknown) => void;
}

/**
 * The events' history: one JetStream stream per tenant (`RL_EVENTS_V1_<tenant>`, subjects
 * `rl.v1.<tenant>.>`). Wraps the bus so that a tenant's stream exists before its first event of
 * this process is published: a tenant made after the start is covered without anyone having to
 * remember it. On the in-process bus (no `ensureStream`) it is the bus itself: no history.
 */
export function withEventHistory(bus: Bus, o: EventHistoryOptions): Bus & { ensureTenants(tenantIds: string[]): Promise<void> } {
  const ensureStream = bus.ensureStream?.bind(bus);
  if (!ensureStream) return { ...bus, ensureTenants: async () => {} };
  const ready = new Set<string>();
  const pending = new Map<string, Promise<void>>();
  /** After a failure (no JetStream, a user without the stream permissions) the stream is not tried again for a minute. */
  const failedUntil = new Map<string, number>();
  const ensure = (tenantId: string): Promise<void> => {
    let p = pending.get(tenantId);
    if (!p) {
      p = ensureStream({
        name: eventStreamName(tenantId),
        subjects: [eventSubjects.tenant(tenantId)],
        maxAgeSeconds: o.maxAgeSeconds,
        description: `Events of tenant ${tenantId} (rl.v1), kept ${o.maxAgeSeconds} s`,
      }).then(
        () => {
          ready.add(tenantId);
        },
        (error) => {
          o.onError(tenantId, error);
          pending.delete(tenantId);
          failedUntil.set(tenantId, Date.now() + RETRY_AFTER_FAILURE_MS);
        },
      );
      pending.set(tenantId, p);
    }
    return p;
  };
  return {
    kind: bus.kind,
    subscribe: (subject, handler) => bus.subscribe(subject, handler),
    health: () => bus.health(),
    ensureStream,
    close: () => bus.close(),
    publish(subject, message) {
      const event = parseEventSubject(subject);
      if (!event || ready.has(event.tenantId) || (failedUntil.get(event.tenantId) ?? 0) > Date.now()) return bus.publish(subject, message);
      // Chained on the one pending promise: a tenant's first events keep their order.
      void ensure(event.tenantId).then(() => bus.publish(subject, message));
    },
    async ensureTenants(tenantIds) {
      await Promise.all(tenantIds.map(ensure));
    },
  };
}
