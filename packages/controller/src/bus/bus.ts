/** Notifications between controller replicas and agents: NATS when configured, else in-process. */
export interface Bus {
  /** `nats` or `memory` (one controller process). */
  readonly kind: "nats" | "memory";
  /** Publishes a JSON message; delivery is best effort (the desired state lives in PostgreSQL). */
  publish(subject: string, message: unknown): void;
  /** Subscribes to a subject (NATS wildcards `*` and `>` allowed); returns the unsubscribe function. */
  subscribe(subject: string, handler: (message: unknown, subject: string) => void): () => void;
  /** `ok` when the bus can deliver, `down` when NATS is unreachable, `disabled` for in-process. */
  health(): "ok" | "down" | "disabled";
  /**
   * Creates the JetStream stream, or brings its subjects and max age to these (idempotent).
   * Only a NATS bus has it: the in-process bus keeps no history.
   */
  ensureStream?(spec: StreamSpec): Promise<"created" | "updated" | "unchanged">;
  /**
   * Calls `listener` each time the connection to NATS comes back after it was lost (the server
   * may be a new one that lost what it held: accounts pushed, streams). Only a NATS bus has it.
   */
  onReconnect?(listener: () => void): void;
  close(): Promise<void>;
}

/** A JetStream stream the controller keeps (the events' history). */
export interface StreamSpec {
  name: string;
  subjects: string[];
  maxAgeSeconds: number;
  /** The stream's size cap: past it the oldest messages are dropped. */
  maxBytes: number;
  /** The largest message the stream takes. */
  maxMsgBytes: number;
  /** JetStream replicas (1 on a single server, 3 on a three-node cluster). */
  replicas: number;
  description: string;
}
