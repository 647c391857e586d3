import { DiscardPolicy, type JetStreamManager, jetstreamManager, RetentionPolicy, StorageType } from "@nats-io/jetstream";
import { type ConnectionOptions, connect, credsAuthenticator, type NatsConnection } from "@nats-io/transport-node";
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

/**
 * The first connection, retried with backoff (0.5 s doubling to 5 s) for a bounded time: a
 * controller started with NATS (compose, systemd ordering) waits for it instead of dying, and
 * one pointed at a wrong address still fails its start with the last error.
 */
export async function connectWithRetry(o: NatsBusOptions): Promise<NatsConnection> {
  const connectFn = o.connect ?? connect;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const deadline = Date.now() + (o.connectTimeoutMs ?? 60_000);
  const options: ConnectionOptions = {
    servers: o.url.split(","),
    name: o.name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
    ...(o.creds ? { authenticator: credsAuthenticator(new TextEncoder().encode(o.creds)) } : {}),
  };
  for (let attempt = 1; ; attempt++) {
    try {
      return await connectFn(options);
    } catch (error) {
      const wait = Math.min(5000, 500 * 2 ** (attempt - 1));
      const message = error instanceof Error ? error.message : String(error);
      if (Date.now() + wait > deadline) throw new Error(`NATS unreachable at ${o.url} after ${attempt} attempts: ${message}`, { cause: error });
      (o.onRetry ?? defaultOnRetry)({ attempt, in_ms: wait, error: message });
      await sleep(wait);
    }
  }
}

/** NATS core pub/sub; reconnects forever once connected, so a NATS restart only delays wake-ups. */
export async function createNatsBus(o: NatsBusOptions): Promise<Bus> {
  const nc = await connectWithRetry(o);
  let up = true;
  const reconnected = new Set<() => void>();
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") up = false;
      if (s.type === "reconnect") {
        up = true;
        for (const listener of reconnected) listener();
      }
    }
  })().catch(() => {});
  return {
    kind: "nats",
    publish(subject, message) {
      nc.publish(subject, JSON.stringify(message));
    },
    subscribe(subject, handler) {
      const sub = nc.subscribe(subject, {
        callback: (err, msg) => {
          if (err) return;
          let data: unknown;
          try {
            data = msg.json();
          } catch {
            return; // not ours: ignore garbage on the subject
          }
          handler(data, msg.subject);
        },
      });
      return () => sub.unsubscribe();
    },
    health: () => (up && !nc.isClosed() ? "ok" : "down"),
    ensureStream: (spec) => ensureStream(nc, spec),
    onReconnect(listener) {
      reconnected.add(listener);
    },
    async close() {
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
