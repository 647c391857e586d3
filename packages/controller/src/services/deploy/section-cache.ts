/** Opened sections kept per process by default: a few revisions' worth, or one large one. */
export const SECTION_CACHE_BYTES = 128 * 1024 * 1024;

/** A stored section's name in the cache: its tenant, revision, base and SHA-256 (a section never changes). */
export const sectionKey = (tenantId: string, s: { revision_id: number; base_revision_id: number; sha256: string }) =>
  `${tenantId}/${s.revision_id}/${s.base_revision_id}/${s.sha256}`;

/**
 * The opened prefix sections last built or served, by {@link sectionKey}, up to `maxBytes`
 * together (least recently used out first). A section never changes once stored, and an apply
 * sends the same one to every speaker: without this each GetBundle read it from the database
 * (hex-encoded bytea, parsed: most of a second for 12 MiB) and opened it again, a thousand times
 * for one apply. The process that builds a section keeps it here as it stores it, so the first
 * agent to fetch it does not wait for that read either. A read in flight is shared by the
 * streams that ask meanwhile.
 */
export function createSectionCache(maxBytes: number) {
  const cache = createKeptBySize<Buffer>(maxBytes);
  return {
    /** Whether a section of `size` plain bytes is kept: at most half the budget. */
    keeps: cache.keeps,
    /** The plain section, from the cache or from `read`. */
    get: cache.get,
    /** A section just built (its plain bytes), kept for the streams that will ask for it. */
    put(key: string, plain: Buffer): void {
      cache.put(key, plain, plain.length);
    },
  };
}

export type SectionCache = ReturnType<typeof createSectionCache>;

/**
 * Values made from sections (the opened section, its compressed form), by key, up to `maxBytes`
 * of the sizes they were put with, least recently used out first; a value made in flight is
 * shared by whoever asks meanwhile, and one whose making failed is not kept.
 */
export function createKeptBySize<T>(maxBytes: number) {
  const entries = new Map<string, { value: Promise<T>; size: number }>();
  let held = 0;
  const keeps = (size: number) => size <= maxBytes / 2;
  const add = (key: string, entry: { value: Promise<T>; size: number }) => {
    entries.set(key, entry);
    held += entry.size;
    for (const [k, e] of entries) {
      if (held <= maxBytes) break;
      entries.delete(k);
      held -= e.size;
    }
  };
  return {
    /** Whether a value of `size` is kept: at most half the budget. */
    keeps,
    /** The value, from the cache or from `make`. */
    get(key: string, size: number, make: () => Promise<T>): Promise<T> {
      const hit = entries.get(key);
      if (hit) {
        entries.delete(key);
        entries.set(key, hit);
        return hit.value;
      }
      const value = make();
      if (!keeps(size)) return value;
      const entry = { value, size };
      add(key, entry);
      // A failed make is not kept: the next caller makes it again.
      value.catch(() => {
        if (entries.get(key) === entry) {
          entries.delete(key);
          held -= size;
        }
      });
      return value;
    },
    /** The value when it is kept (made or being made), without making it. */
    peek(key: string): Promise<T> | undefined {
      return entries.get(key)?.value;
    },
    /** A value made elsewhere, kept unless one is already. */
    put(key: string, value: T, size: number): void {
      if (!keeps(size) || entries.has(key)) return;
      add(key, { value: Promise.resolve(value), size });
    },
  };
}
