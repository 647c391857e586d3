import { eventStreamName, eventSubjects } from "@rlc/proto";
import { describe, expect, it } from "vitest";
import type { StreamSpec } from "../../packages/controller/src/bus/bus.js";
import { createMemoryBus } from "../../packages/controller/src/bus/memory-bus.js";
import { STREAM_RETRY, withEventHistory } from "../../packages/controller/src/events/history.js";

// A controller that starts with its NATS cluster asks for a tenant's stream while JetStream
// still elects its leader: the stream fails, and the tenant's events must get their history
// once JetStream answers, within seconds, not a minute later.
const tenantId = "0d9c4f5e-7c1a-4b7e-9d55-1f0f7a3b2c11";
const subject = eventSubjects.status(tenantId, "6c0f3b0e-2a51-4d1e-8f7a-3c2b1a0d9e88");

function history(failFirst: number, failAlways = false) {
  let clock = 1_000_000;
  const calls: StreamSpec[] = [];
  const errors: unknown[] = [];
  const published: string[] = [];
  const bus = createMemoryBus();
  bus.subscribe(eventSubjects.tenant(tenantId), (_data, s) => published.push(s));
  const h = withEventHistory(bus, {
    maxAgeSeconds: 3600,
    maxBytes: 1 << 20,
    replicas: 3,
    now: () => clock,
    random: () => 1, // the backoff's longest wait

    ensureStream: async (_tenant, spec) => {
      calls.push(spec);
      if (failAlways || calls.length <= failFirst) throw new Error("JetStream system temporarily unavailable");
      return "created";
    },
    onError: (_tenant, error) => errors.push(error),
  });
  const settle = () => new Promise((r) => setImmediate(r));
  return { h, calls, errors, published, settle, advance: (ms: number) => (clock += ms) };
}

describe("a tenant's event stream that could not be made", () => {
  it("is tried again by an event a few seconds later, and the events are published meanwhile", async () => {
    const x = history(1);
    await x.h.ensureTenants([tenantId]);
    expect(x.errors).toHaveLength(1);
    x.h.publish(subject, { tenant_id: tenantId });
    await x.settle();
    expect(x.calls).toHaveLength(1); // within the first backoff: no new attempt
    x.advance(STREAM_RETRY.baseMs);
    x.h.publish(subject, { tenant_id: tenantId });
    await x.settle();
    expect(x.calls).toHaveLength(2);
    expect(x.published).toHaveLength(2); // published live, with or without a stream
    // Made now: later events go out without asking again.
    x.advance(STREAM_RETRY.maxMs);
    x.h.publish(subject, { tenant_id: tenantId });
    await x.settle();
    expect(x.calls).toHaveLength(2);
  });

  it("waits longer after each failure in a row, at most a minute", async () => {
    const x = history(100);
    await x.h.ensureTenants([tenantId]);
    const gaps: number[] = [];
    let last = 0;
    for (let elapsed = 0; x.calls.length < 9; ) {
      x.advance(500);
      elapsed += 500;
      x.h.publish(subject, { tenant_id: tenantId });
      await x.settle();
      if (x.calls.length > gaps.length + 1) {
        gaps.push(elapsed - last);
        last = elapsed;
      }
    }
    expect(gaps).toEqual([1000, 2000, 4000, 8000, 16_000, 32_000, 60_000, 60_000]);
  });

  it("does not hold the start for every tenant: after a batch that all failed, the others wait for their first events", async () => {
    const x = history(0, true);
    const tenants = Array.from({ length: 40 }, (_, i) => `0d9c4f5e-7c1a-4b7e-9d55-${String(i).padStart(12, "0")}`);
    await x.h.ensureTenants(tenants);
    expect(x.calls).toHaveLength(8);
    // A tenant left out gets its stream asked for by its first event.
    x.h.publish(eventSubjects.status(tenants[39]!, "6c0f3b0e-2a51-4d1e-8f7a-3c2b1a0d9e88"), { tenant_id: tenants[39] });
    await x.settle();
    expect(x.calls.at(-1)?.name).toBe(eventStreamName(tenants[39]!));
  });

  it("asks for every tenant's stream at the start while some succeed", async () => {
    const x = history(3);
    const tenants = Array.from({ length: 20 }, (_, i) => `0d9c4f5e-7c1a-4b7e-9d55-${String(i).padStart(12, "0")}`);
    await x.h.ensureTenants(tenants);
    expect(x.calls).toHaveLength(20);
    expect(x.errors).toHaveLength(3);
  });
});
