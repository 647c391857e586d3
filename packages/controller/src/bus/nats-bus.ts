import { DiscardPolicy, type JetStreamManager, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { type ConnectionOptions, connect, credsAuthenticator, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { Bus, StreamSpec } from "./bus.js";

export interface NatsBusOptions {
  url: string;
  name: string;
  /** The controller's user (`.creds` text); none = an unauthenticated NATS (development). */
  creds?: string | undefined;
  /** How long the first connection is retried before the start fails (default 60 s). */
  connectTimeoutMs?: number;
  /** Told about each failed first attempt; default a JSON line on stderr. */
  onRetry?: (info: { attempt: number; in_ms: number; error: string }) => void;
  connect?: (options: ConnectionOptions) => Promise<NatsConnection>;
  sleep?: (ms: number) => Promise<void>;
}

const defaultOnRetry = (info: { attempt: number; in_ms: number; error: string }) =>
  process.stderr.write(`${JSON.stringify({ level: 40, time: Date.now(), msg: "NATS connect failed; retrying", ...info })}\n`);

/** The connection's options: every server of `o.url`, reconnecting forever, with the controller's user. */
function connectionOptions(o: NatsBusOptions): ConnectionOptions {
  return {
    servers: o.url.split(","),
    name: o.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...(o.creds ? { authenticator: credsAuthenticator(new TextEncoder().encode(o.creds)) } : {}),
  };
}

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The wait before attempt `attempt` (1-based): 0.5 s doubling to 5 s. */
const retryWait = (attempt: number) => Math.min(5000, 500 * 2 ** (attempt - 1));

/**
 * The first connection, retried with backoff (0.5 s doubling to 5 s) for a bounded time: a
 * controller started with NATS (compose, systemd ordering) waits for it instead of dying, and
 * one pointed at a wrong address still fails its start with the last error.
 */
export async function connectWithRetry(o: NatsBusOptions): Promise<NatsConnection> {
  const connectFn = o.connect ?? connect;
  const sleep = o.sleep ?? defaultSleep;
  const deadline = Date.now() + (o.connectTimeoutMs ?? 60_000);
  const options = connectionOptions(o);
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectFn(options);
    } catch (error) {
      const wait = retryWait(attempt);
      const message = error instanceof Error ? error.message : String(error);
      if (Date.now() + wait > deadline) throw new Error(`NATS unreachable at ${o.url} after ${attempt} attempts: ${message}`, { cause: error });
      (o.onRetry ?? defaultOnRetry)({ attempt, in_ms: wait, error: message });
      await sleep(wait);
    }
  }
}

interface Subscribed {
  subject: string;
  handler: (message: unknown, subject: string) => void;
  sub: Subscription | null;
}

/**
 * NATS core pub/sub. nats.js reconnects by itself, so a NATS restart only delays wake-ups; where
 * it gives up (the same authentication error twice in a row: a server that no longer trusts the
 * controller's user, until its configuration is put right) the bus opens a new connection, with
 * the same backoff and no deadline, and subscribes again to everything it had. A publish never
 * throws: delivery is best effort, and one made while no connection is open is dropped.
 */
export async function createNatsBus(o: NatsBusOptions): Promise<Bus> {
  const connectFn = o.connect ?? connect;
  const sleep = o.sleep ?? defaultSleep;
  let nc = await connectWithRetry(o);
  let up = true;
  let closing = false;
  const reconnected = new Set<() => void>();
  const subscribed = new Set<Subscribed>();
  const attach = (conn: NatsConnection, s: Subscribed) => {
    s.sub = conn.subscribe(s.subject, {
      callback: (err, msg) => {
        if (err) return;
        let data: unknown;
        try {
          data = msg.json();
        } catch {
          return; // not ours: ignore garbage on the subject
        }
        s.handler(data, msg.subject);
      },
    });
  };
  const comeBack = () => {
    up = true;
    for (const listener of reconnected) listener();
  };
  const watch = (conn: NatsConnection) => {
    const statuses: ReturnType<NatsConnection["status"]> & { stop?: () => void } = conn.status();
    (async () => {
      for await (const s of statuses) {
        if (s.type === "disconnect") up = false;
        if (s.type === "reconnect") comeBack();
      }
    })().catch(() => {});
    void conn.closed().then(async (error) => {
      statuses.stop?.();
      if (closing) return;
      up = false;
      for (let attempt = 1; !closing; attempt++) {
        const wait = retryWait(attempt);
        (o.onRetry ?? defaultOnRetry)({ attempt, in_ms: wait, error: `the connection closed: ${error instanceof Error ? error.message : "by the server"}` });
        await sleep(wait);
        if (closing) return;
        let next: NatsConnection;
        try {
          next = await connectFn(connectionOptions(o));
        } catch {
          continue;
        }
        if (closing) return void (await next.close().catch(() => {}));
        nc = next;
        for (const s of subscribed) attach(next, s);
        watch(next);
        comeBack();
        return;
      }
    });
  };
  watch(nc);
  return {
    kind: "nats",
    publish(subject, message) {
      try {
        nc.publish(subject, JSON.stringify(message));
      } catch {
        // Closed for good until the next connection opens: dropped, as a lost message would be.
      }
    },
    subscribe(subject, handler) {
      const s: Subscribed = { subject, handler, sub: null };
      subscribed.add(s);
      if (!nc.isClosed()) attach(nc, s);
      return () => {
        subscribed.delete(s);
        s.sub?.unsubscribe();
      };
    },
    health: () => (up && !nc.isClosed() ? "ok" : "down"),
    ensureStream: (spec) => ensureStream(nc, spec),
    onReconnect(listener) {
      reconnected.add(listener);
    },
    async close() {
      closing = true;
      await nc.drain().catch(() => nc.close());
    },
  };
}

const NS_PER_S = 1_000_000_000;

/** Creates the stream, or updates its subjects and max age when they differ; limits retention, file storage. */
export async function ensureStream(nc: NatsConnection, spec: StreamSpec): Promise<"created" | "updated" | "unchanged"> {
  return ensureStreamOn(await jetstreamManager(nc, { checkAPI: false }), spec);
}

/**
 * The stream as `spec` says, bounded: at most `maxBytes` (the oldest events go first), no message
 * over `maxMsgBytes`, kept `maxAgeSeconds`. Created, or brought to the spec when it differs.
 */
export async function ensureStreamOn(jsm: JetStreamManager, spec: StreamSpec): Promise<"created" | "updated" | "unchanged"> {
  const maxAge = spec.maxAgeSeconds * NS_PER_S;
  const bounds = {
    max_age: maxAge,
    max_bytes: spec.maxBytes,
    max_msg_size: spec.maxMsgBytes,
    discard: DiscardPolicy.Old,
  };
  const existing = await jsm.streams.info(spec.name).catch((error: Error) => {
    if (/stream not found/i.test(error.message)) return null;
    throw error;
  });
  if (!existing) {
    await jsm.streams.add({
      name: spec.name,
      subjects: spec.subjects,
      description: spec.description,
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      num_replicas: spec.replicas,
      ...bounds,
    });
    return "created";
  }
  const c = existing.config;
  const same =
    c.max_age === maxAge &&
    c.max_bytes === spec.maxBytes &&
    c.max_msg_size === spec.maxMsgBytes &&
    c.discard === DiscardPolicy.Old &&
    c.subjects.length === spec.subjects.length &&
    spec.subjects.every((s) => c.subjects.includes(s));
  if (same) return "unchanged";
  await jsm.streams.update(spec.name, { ...c, subjects: spec.subjects, description: spec.description, ...bounds });
  return "updated";
}
