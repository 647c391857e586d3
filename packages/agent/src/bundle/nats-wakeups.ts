import { type ConnectionOptions, credsAuthenticator, type NatsConnection, connect as natsConnect } from "@nats-io/transport-node";
import { type AgentNotification, internalSubjects } from "@rlc/proto";
import { backoffDelay, type Clock } from "@rlc/shared/time";
import { errorFields, type Logger } from "../log.js";

export interface NatsWakeupsOptions {
  /** One URL or a comma-separated list. */
  url: string;
  /**
   * The agent's NATS user (`.creds` text from enrollment): it may subscribe to this speaker's
   * notify subject and publish its status subject, nothing else. Null = connect without.
   */
  creds?: string | null;
  tenantId: string;
  speakerId: string;
  /**
   * A notification the controller signed, or null after a reconnect (messages may have been
   * missed). Either way only a hint: the sync loop asks the controller what to do and verifies
   * what it gets.
   */
  onWake(notification: AgentNotification | null): void;
  /**
   * The message as a notification when it verifies (signed by a pinned key, for this speaker,
   * fresh); null otherwise, and it is ignored. A user of the same NATS account can make the
   * server publish on this subject (a consumer's deliver subject, a JetStream request's reply
   * subject), so nothing unsigned is acted on, not even as a plain wake-up.
   */
  accept(value: unknown): Promise<AgentNotification | null>;
  clock: Clock;
  log: Logger;
  connect?: (options: ConnectionOptions) => Promise<NatsConnection>;
}

/** Between connections: 1 s doubling to 30 s, with jitter. */
const BACKOFF = { baseMs: 1000, maxMs: 30_000 };
/** A connection open at least this long makes the next one's backoff start over. */
const LASTED_MS = 60_000;

/**
 * Subscribes to the speaker's notify subject. A connection is retried here with backoff: the
 * first (NATS may start after the agent), and a new one whenever the last closed for good —
 * nats.js reconnects by itself, but gives up after the same authentication error twice in a
 * row, which a NATS server replaced by a new one answers until the controller has pushed the
 * tenant's account to it again.
 */
export function startNatsWakeups(o: NatsWakeupsOptions): { close(): Promise<void> } {
  const abort = new AbortController();
  const subject = internalSubjects.notify(o.tenantId, o.speakerId);
  const connect = o.connect ?? natsConnect;
  let nc: NatsConnection | null = null;
  // Stopped by close() itself: the status() iterator need not end when the connection closes.
  let statuses: (AsyncIterable<unknown> & { stop?: () => void }) | null = null;
  const subscribe = (conn: NatsConnection) =>
    conn.subscribe(subject, {
      callback: (error, msg) => {
        // A refused subscription (credentials for another speaker) would otherwise fail silently.
        if (error) return void o.log.warn("NATS subscription refused", { subject, ...errorFields(error) });
        // The controller publishes plainly: a message with a reply subject or headers is a
        // JetStream delivery or a request someone else made, never a wake-up of ours.
        if (msg.reply || msg.headers) return void o.log.debug("NATS message ignored: not a plain publish", { subject });
        let value: unknown = null;
        try {
          value = msg.json();
        } catch {
          return void o.log.debug("NATS message ignored: not JSON", { subject });
        }
        void o.accept(value).then(
          (n) => (n ? o.onWake(n) : o.log.debug("NATS message ignored: not a notification the controller signed", { subject })),
          (error: unknown) => o.log.warn("NATS message not checked", errorFields(error)),
        );
      },
    });
  const running = (async () => {
    let attempt = 0;
    for (let connected = 0; !abort.signal.aborted; ) {
      let conn: NatsConnection;
      try {
        conn = await connect({
          servers: o.url.split(","),
          name: `rl-agent ${o.speakerId}`,
          maxReconnectAttempts: -1,
          reconnectTimeWait: 2000,
          ...(o.creds ? { authenticator: credsAuthenticator(new TextEncoder().encode(o.creds)) } : {}),
        });
      } catch (error) {
        const wait = backoffDelay(attempt++, BACKOFF);
        o.log.warn("NATS connect failed; retrying", { in_ms: wait, ...errorFields(error) });
        await o.clock.sleep(wait, abort.signal);
        continue;
      }
      const since = o.clock.now();
      nc = conn;
      if (abort.signal.aborted) return void (await conn.close());
      subscribe(conn);
      o.log.info("NATS subscribed", { subject });
      // A connection after one that closed: what was published meanwhile was missed.
      if (connected++ > 0) o.onWake(null);
      const iterator: ReturnType<NatsConnection["status"]> & { stop?: () => void } = conn.status();
      statuses = iterator;
      const closed = conn.closed();
      void closed.then(() => iterator.stop?.());
      for await (const status of iterator) {
        if (status.type === "reconnect") o.onWake(null);
      }
      const error = await closed;
      if (abort.signal.aborted) return;
      // The backoff starts over only after a connection that lasted: one the server keeps closing
      // at once (a refused account, too many connections) is not met by every agent each second.
      if (o.clock.now() - since >= LASTED_MS) attempt = 0;
      const wait = backoffDelay(attempt++, BACKOFF);
      o.log.warn("NATS connection closed; connecting again", { in_ms: wait, ...(error ? errorFields(error) : {}) });
      await o.clock.sleep(wait, abort.signal);
    }
  })().catch((error: unknown) => o.log.warn("NATS wake-ups stopped", errorFields(error)));
  return {
    async close() {
      abort.abort();
      const conn = nc as NatsConnection | null;
      // close, not drain: the agent only listens, and drain would wait on a NATS that is down.
      if (conn && !conn.isClosed()) await conn.close().catch(() => undefined);
      statuses?.stop?.();
      await running;
    },
  };
}
