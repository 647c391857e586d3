/**
 * Token buckets by key, bounded: when more than `maxKeys` keys are tracked, the full buckets
 * (keys that did nothing lately) are forgotten first, so a flood of distinct keys costs memory
 * only up to the bound.
 */
export function createBuckets(rate: { burst: number; everyMs: number }, maxKeys = 10_000) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const refill = (b: { tokens: number; at: number }, now: number) => {
    const gained = (now - b.at) / rate.everyMs;
    if (gained > 0) {
      b.tokens = Math.min(rate.burst, b.tokens + gained);
      b.at = now;
    }
  };
  return {
    /** Takes one token; false when the bucket is empty. */
    take(key: string, now = Date.now()): boolean {
      let b = buckets.get(key);
      if (!b) {
        if (buckets.size >= maxKeys) {
          for (const [k, v] of buckets) {
            refill(v, now);
            if (v.tokens >= rate.burst) buckets.delete(k);
          }
          if (buckets.size >= maxKeys) buckets.clear();
        }
        b = { tokens: rate.burst, at: now };
        buckets.set(key, b);
      }
      refill(b, now);
      if (b.tokens < 1) return false;
      b.tokens -= 1;
      return true;
    },
    /** True when the bucket is empty (without taking). */
    empty(key: string, now = Date.now()): boolean {
      const b = buckets.get(key);
      if (!b) return false;
      refill(b, now);
      return b.tokens < 1;
    },
  };
}
