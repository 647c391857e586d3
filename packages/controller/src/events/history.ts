import { eventStreamName, eventSubjects, parseEventSubject } from "@rlc/proto";
import { type BackoffOptions, backoffDelay } from "@rlc/shared/time";
import type { StreamSpec } from "../bus/bus.js";
import type { Bus } from "../bus/index.js";

/** The largest event a stream takes: a status report is at most 64 KiB, its event a little more. */
export const EVENT_MAX_BYTES = 128 * 1024;

/**
 * After a stream could not be made (a JetStream still electing its leader when the controller
 * starts with its cluster, a NATS without JetStream, a user without the stream permissions), the
 * next event tries again after a backoff from ~1 s doubling to a minute.
 */
export const STREAM_RETRY: BackoffOptions = { baseMs: 1000, maxMs: 60_000 };

export interface EventHistoryOptions {
  /** How long a tenant's stream keeps events (NATS_EVENTS_MAX_AGE_SECONDS). */
  maxAgeSeconds: number;
  /** Each stream's size cap (NATS_EVENTS_MAX_BYTES): past it the oldest events go. */
  maxBytes: number;
  /** JetStream replicas of each stream (NATS_EVENTS_REPLICAS). */
  replicas: number;
  /**
   * Keeps a tenant's stream: in the tenant's own NATS account when the controller has the
   * accounts' authority; null = on the bus's own connection (one account, development).
   */
  ensureStream?: ((tenantId: string, spec: StreamSpec) => Promise<unknown>) | null;
  /** Told when a stream could not be created or updated (the events are still published). */
  onError: (tenantId: string, error: unknown) => void;
  /** Milliseconds since the epoch (default `Date.now`) and the backoff's jitter; tests pass their own. */
  now?: () => number;
  random?: () => number;
}

export interface EventHistory {
  /** Makes or checks these tenants' streams, eight at a time (at start, and after a reconnect). */
  ensureTenants(tenantIds: string[]): Promise<void>;
  /** Forgets which streams exist: the next event of each tenant makes or checks its stream again. */
  forget(): void;
}

/**
 * The events' history: one JetStream stream per tenant (`RL_EVENTS_V1_<tenant>`, subjects
 * `rl.v1.<tenant>.>`). Wraps the bus so that a tenant's stream exists before its first event of
 * this process is published: a tenant made after the start is covered without anyone having to
 * remember it. On the in-process bus (no `ensureStream`) it is the bus itself: no history.
 */
export function withEventHistory(bus: Bus, o: EventHistoryOptions): Bus & EventHistory {
  const onBus = bus.ensureStream?.bind(bus);
  const ensureStream = o.ensureStream ?? (onBus ? (_tenantId: string, spec: StreamSpec) => onBus(spec) : null);
  if (!ensureStream) return { ...bus, ensureTenants: async () => {}, forget: () => {} };
  const ready = new Set<string>();
  const pending = new Map<string, Promise<void>>();
  const now = o.now ?? Date.now;
  /** A tenant whose stream failed: how many times in a row, and until when no event tries again. */
  const failed = new Map<string, { times: number; until: number }>();
  const ensure = (tenantId: string): Promise<void> => {
    let p = pending.get(tenantId);
    if (!p) {
      p = ensureStream(tenantId, {
        name: eventStreamName(tenantId),
        subjects: [eventSubjects.tenant(tenantId)],
        maxAgeSeconds: o.maxAgeSeconds,
        maxBytes: o.maxBytes,
        maxMsgBytes: EVENT_MAX_BYTES,
        replicas: o.replicas,
        description: `Events of tenant ${tenantId} (rl.v1), kept ${o.maxAgeSeconds} s`,
      }).then(
        () => {
          ready.add(tenantId);
          failed.delete(tenantId);
        },
        (error) => {
          o.onError(tenantId, error);
          if (pending.get(tenantId) === p) pending.delete(tenantId);
          const times = (failed.get(tenantId)?.times ?? 0) + 1;
          failed.set(tenantId, { times, until: now() + backoffDelay(times - 1, STREAM_RETRY, o.random) });
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
    ...(onBus ? { ensureStream: onBus } : {}),
    ...(bus.onReconnect ? { onReconnect: bus.onReconnect.bind(bus) } : {}),
    close: () => bus.close(),
    publish(subject, message) {
      const event = parseEventSubject(subject);
      if (!event || ready.has(event.tenantId) || (failed.get(event.tenantId)?.until ?? 0) > now()) return bus.publish(subject, message);
      // Chained on the one pending promise: a tenant's first events keep their order.
      void ensure(event.tenantId).then(() => bus.publish(subject, message));
    },
    forget() {
      ready.clear();
      failed.clear();
      pending.clear();
    },
    async ensureTenants(tenantIds) {
      // A few at a time: with tenant accounts each one is a connection of its own. A batch that
      // all failed ends it (a JetStream without a leader answers each request only with its
      // timeout: a start would wait that long for every eight tenants); the others' streams
      // are made with their first events.
      for (let i = 0; i < tenantIds.length; i += 8) {
        const batch = tenantIds.slice(i, i + 8);
        await Promise.all(batch.map(ensure));
        if (batch.every((id) => failed.has(id))) return;
      }
    },
  };
}
