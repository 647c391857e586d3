// The VRP document of `RPKI_VRP_SOURCE` (`file:<path>` or an http(s) URL), read in full into an
// index and read again once it is older than `RPKI_REFRESH_MINUTES`. Validation is *unavailable*
// while the last load failed or the document's own build time is older than
// `RPKI_MAX_AGE_HOURS`: callers then validate nothing and drop nothing.
import { readFile } from "node:fs/promises";
import type { OutboundClient } from "./outbound.js";
import { parseVrpDocument, type VrpIndex } from "./rpki-vrps.js";

export interface RpkiStatus {
  available: boolean;
  /** Why validation is unavailable; null when available. */
  reason: string | null;
  /** The document's own build time. */
  generated_at: string | null;
  /** When it was last read (successfully or not). */
  loaded_at: string | null;
  vrp_count: number;
}

export interface RpkiValidator {
  /** The index, read again first when older than the refresh interval; null (with status().reason) when unavailable. */
  index(): Promise<VrpIndex | null>;
  /** The index as it is now, never waiting (a due reload starts in the background). */
  peek(): VrpIndex | null;
  status(): RpkiStatus;
}

export interface RpkiValidatorOptions {
  spec: string;
  outbound: OutboundClient;
  refreshMinutes?: number;
  maxAgeHours?: number;
  /** Milliseconds since the epoch; default Date.now. */
  now?: () => number;
  /** The document at most (default 512 MiB: a full global VRP set in JSON is ~60 MB). */
  maxBytes?: number;
}

export function createRpkiValidator(opts: RpkiValidatorOptions): RpkiValidator {
  const now = opts.now ?? Date.now;
  const refreshMs = (opts.refreshMinutes ?? 10) * 60_000;
  const maxAgeMs = (opts.maxAgeHours ?? 24) * 3_600_000;
  if (!opts.spec.startsWith("file:") && !/^https?:\/\//.test(opts.spec)) {
    throw new Error(`RPKI_VRP_SOURCE must be file:<path> or an http(s):// URL, not "${opts.spec}"`);
  }
  let loaded: { index: VrpIndex; generatedAt: number; count: number } | null = null;
  let error: string | null = null;
  let loadedAt: number | null = null;
  let loading: Promise<void> | null = null;

  const read = async (): Promise<string> => {
    if (opts.spec.startsWith("file:")) return readFile(opts.spec.slice("file:".length), "utf8");
    const res = await opts.outbound.request(opts.spec, {
      headers: { accept: "application/json" },
      maxBytes: opts.maxBytes ?? 512 * 1024 * 1024,
      timeoutMs: 120_000,
    });
    return res.body.toString("utf8");
  };
  const load = (): Promise<void> => {
    loading ??= (async () => {
      try {
        const doc = parseVrpDocument(await read());
        loaded = { index: doc.index, generatedAt: doc.generatedAt.getTime(), count: doc.index.size };
        error = null;
      } catch (err) {
        // A document that fails to load makes validation unavailable: an old index is not kept.
        loaded = null;
        error = `the VRP document (${opts.spec}) failed to load: ${err instanceof Error ? err.message : String(err)}`;
      } finally {
        loadedAt = now();
        loading = null;
      }
    })();
    return loading;
  };
  const due = () => loadedAt === null || now() - loadedAt >= refreshMs;
  const usable = (): VrpIndex | null => {
    if (!loaded) return null;
    return now() - loaded.generatedAt > maxAgeMs ? null : loaded.index;
  };

  return {
    async index() {
      if (due()) await load();
      return usable();
    },
    peek() {
      if (due() && !loading) void load();
      return usable();
    },
    status() {
      const current = loaded as { index: VrpIndex; generatedAt: number; count: number } | null;
      const stale = current !== null && now() - current.generatedAt > maxAgeMs;
      const reason =
        error ??
        (current === null
          ? "the VRP document has not been read yet"
          : stale
            ? `the VRP document was built ${new Date(current.generatedAt).toISOString()}, more than ${maxAgeMs / 3_600_000} hours ago (RPKI_MAX_AGE_HOURS)`
            : null);
      return {
        available: reason === null,
        reason,
        generated_at: current ? new Date(current.generatedAt).toISOString() : null,
        loaded_at: loadedAt === null ? null : new Date(loadedAt).toISOString(),
        vrp_count: current?.count ?? 0,
      };
    },
  };
}
