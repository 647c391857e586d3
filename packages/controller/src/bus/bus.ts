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
  close(): Promise<void>;
}
