import { createCounter, createSlots, type GrpcLimits } from "../../grpc/limits.js";

/** Why a transfer got no place. */
export type BundleRefusal = "key" | "busy" | "gone";

export type BundlePlace = { ok: true; release: () => void } | { ok: false; reason: BundleRefusal };

/**
 * The bundle transfers this process serves at once, gRPC GetBundle streams and HTTP downloads
 * together: one object for both transports (made once, handed to each), so a node key cannot
 * double its share by using both, and the total bounds what all transfers hold in memory.
 */
export interface BundleLimiter {
  readonly limits: Pick<GrpcLimits, "bundlesPerKey" | "bundlesTotal" | "bundlesWaiting">;
  /**
   * A place for one transfer of `keyId`. Refused at once when the key already has
   * `bundlesPerKey` in flight (`key`) or the line for a free place is full (`busy`); otherwise
   * it waits in line, first come first served, and is refused (`gone`) if `gone` settles first
   * (the caller left). `release` gives the place back; calling it again does nothing.
   */
  acquire(keyId: string, gone: Promise<unknown>): Promise<BundlePlace>;
  /** Transfers served right now. */
  held(): number;
  /** Transfers waiting for a place right now. */
  waiting(): number;
}

export function createBundleLimiter(limits: Pick<GrpcLimits, "bundlesPerKey" | "bundlesTotal" | "bundlesWaiting">): BundleLimiter {
  const byKey = createCounter(limits.bundlesPerKey);
  const all = createSlots(limits.bundlesTotal, limits.bundlesWaiting);
  return {
    limits: { bundlesPerKey: limits.bundlesPerKey, bundlesTotal: limits.bundlesTotal, bundlesWaiting: limits.bundlesWaiting },
    async acquire(keyId, gone) {
      const releaseKey = byKey.acquire(keyId);
      if (!releaseKey) return { ok: false, reason: "key" };
      let left = false;
      void gone.then(() => {
        left = true;
      });
      const releaseAll = await all.acquire(gone);
      if (!releaseAll) {
        releaseKey();
        return { ok: false, reason: left ? "gone" : "busy" };
      }
      return {
        ok: true,
        release() {
          releaseKey();
          releaseAll();
        },
      };
    },
    held: all.held,
    waiting: all.waiting,
  };
}
