import { connect, JSONCodec, type NatsConnection } from "nats";
import type { Bus } from "./bus.js";

const codec = JSONCodec();

/** NATS core pub/sub; reconnects forever, so a NATS restart only delays wake-ups. */
export async function createNatsBus(url: string, name: string): Promise<Bus> {
  const nc: NatsConnection = await connect({
    servers: url.split(","),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 500,
  });
  let up = true;
  (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect" || s.type === "error") up = false;
      if (s.type === "reconnect") up = true;
    }
  })().catch(() => {});
  return {
    kind: "nats",
    publish(subject, message) {
      nc.publish(subject, codec.encode(message));
    },
    subscribe(subject, handler) {
      const sub = nc.subscribe(subject, {
        callback: (err, msg) => {
          if (err) return;
          let data: unknown;
          try {
            data = codec.decode(msg.data);
          } catch {
            return; // not ours: ignore garbage on the subject
          }
          handler(data, msg.subject);
        },
      });
      return () => sub.unsubscribe();
    },
    health: () => (up && !nc.isClosed() ? "ok" : "down"),
    async close() {
      await nc.drain().catch(() => nc.close());
    },
  };
}
