import { AsyncResource } from "node:async_hooks";
import type { Bus } from "./bus.js";

function matches(pattern: string, subject: string): boolean {
  const p = pattern.split(".");
  const s = subject.split(".");
  for (let i = 0; i < p.length; i++) {
    if (p[i] === ">") return s.length > i;
    if (i >= s.length || (p[i] !== "*" && p[i] !== s[i])) return false;
  }
  return p.length === s.length;
}

export function createMemoryBus(): Bus {
  const subs = new Set<{ pattern: string; handler: (m: unknown, s: string) => void }>();
  return {
    kind: "memory",
    publish(subject, message) {
      for (const sub of subs) if (matches(sub.pattern, subject)) queueMicrotask(() => sub.handler(message, subject));
    },
    subscribe(pattern, handler) {
      // Handlers run in the subscriber's async context, not the publisher's: a message published
      // from inside a database transaction must not carry that transaction's scope along.
      const sub = { pattern, handler: AsyncResource.bind(handler) };
      subs.add(sub);
      return () => subs.delete(sub);
    },
    health: () => "disabled",
    async close() {
      subs.clear();
    },
  };
}
