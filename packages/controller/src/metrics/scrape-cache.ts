/**
 * One query's answer per key (a tenant's id, or null for all tenants), shared by the scrapes
 * within `ttlMs` and by concurrent ones (a second scrape during the query waits for the same
 * promise). Monotonic time: the controller's clock may be a test's hand-moved one.
 */
export function cachedBy<K, T>(ttlMs: number, load: (key: K) => Promise<T>): (key: K) => Promise<T> {
  const entries = new Map<K, { at: number; value: Promise<T> }>();
  return (key) => {
    const now = performance.now();
    // Answers past their window go as the next scrape comes: as many entries as keys scraped
    // within one window, however many tenants scrape over time.
    for (const [k, e] of entries) if (now - e.at >= ttlMs) entries.delete(k);
    let entry = entries.get(key);
    if (!entry) {
      const value = load(key);
      const fresh = { at: now, value };
      entry = fresh;
      entries.set(key, fresh);
      // A failed query is not kept: the next scrape tries again.
      value.catch(() => {
        if (entries.get(key) === fresh) entries.delete(key);
      });
    }
    return entry.value;
  };
}

/** The query's answer, or a rejection once `ms` have passed (the query itself runs on). */
export function within<T>(ms: number, query: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the ${query} query took longer than ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
