import { describe, expect, it } from "vitest";
import { createBundleLimiter } from "./bundle-limiter.js";

const never = new Promise<never>(() => {});

describe("bundle transfers at once", () => {
  it("refuses a node key its next transfer once it holds its share, whatever the total left", async () => {
    const limiter = createBundleLimiter({ bundlesPerKey: 1, bundlesTotal: 10, bundlesWaiting: 10 });
    const first = await limiter.acquire("key-a", never);
    expect(first.ok).toBe(true);
    expect(await limiter.acquire("key-a", never)).toEqual({ ok: false, reason: "key" });
    expect((await limiter.acquire("key-b", never)).ok).toBe(true);
    if (first.ok) first.release();
    expect((await limiter.acquire("key-a", never)).ok).toBe(true);
  });

  it("lines transfers up first come first served, and answers busy once the line is full", async () => {
    const limiter = createBundleLimiter({ bundlesPerKey: 5, bundlesTotal: 1, bundlesWaiting: 1 });
    const held = await limiter.acquire("a", never);
    const waiting = limiter.acquire("b", never);
    expect(limiter.waiting()).toBe(1);
    expect(await limiter.acquire("c", never)).toEqual({ ok: false, reason: "busy" });
    if (held.ok) held.release();
    expect((await waiting).ok).toBe(true);
    expect(limiter.held()).toBe(1);
  });

  it("gives a waiting transfer's places back when its caller leaves, and a double release frees one place only", async () => {
    const limiter = createBundleLimiter({ bundlesPerKey: 1, bundlesTotal: 1, bundlesWaiting: 2 });
    const held = await limiter.acquire("a", never);
    let leave!: () => void;
    const gone = new Promise<void>((resolve) => {
      leave = resolve;
    });
    const waiting = limiter.acquire("b", gone);
    leave();
    expect(await waiting).toEqual({ ok: false, reason: "gone" });
    // b's per-key place was returned: b may try again.
    const again = limiter.acquire("b", never);
    if (held.ok) {
      held.release();
      held.release();
    }
    expect((await again).ok).toBe(true);
    expect(limiter.held()).toBe(1);
    expect(await limiter.acquire("c", Promise.resolve())).toEqual({ ok: false, reason: "gone" });
  });
});
