// The ASN source of the AS_PREFIXES collector (`ASN_SOURCE`): `ripestat` asks
// RIPEstat's announced-prefixes API (or a mirror at `ASN_SOURCE_URL`); `file:<path>` reads an
// offline table once. Several files may be given as `file:<a>,<b>` (ip-location-db ships IPv4
// and IPv6 apart); a path therefore cannot contain a comma.
import { type CidrValue, parseCidrValue } from "@rlc/shared/prefix";
import { AsnSourceError } from "./asn-errors.js";
import { type AsnFileIndex, canonicalCidrs, loadAsnFileIndex } from "./asn-file-index.js";
import type { OutboundClient } from "./outbound.js";

export { AsnSourceError, type AsnSourceErrorCode } from "./asn-errors.js";

export interface AsnSource {
  /** Canonical CIDRs the ASN announces (host bits cleared, deduplicated, sorted); [] when none. */
  announcedPrefixes(asn: number, options?: { signal?: AbortSignal }): Promise<string[]>;
  close(): Promise<void>;
}

export interface AsnSourceDeps {
  /** Used by `ripestat` only. */
  client?: OutboundClient;
  /** `ASN_SOURCE_URL`; default `https://stat.ripe.net`. */
  baseUrl?: string;
  /** Per RIPEstat request; default the client's. Large ASNs take RIPEstat several seconds. */
  timeoutMs?: number;
}

export const DEFAULT_RIPESTAT_URL = "https://stat.ripe.net";

export function createAsnSource(spec: string, deps: AsnSourceDeps = {}): AsnSource {
  if (spec === "ripestat") {
    if (!deps.client) throw new AsnSourceError("asn_source_config", "ASN_SOURCE=ripestat needs an outbound client");
    return createRipestatSource(deps.client, deps.baseUrl ?? DEFAULT_RIPESTAT_URL, deps.timeoutMs);
  }
  if (spec.startsWith("file:")) {
    const paths = spec
      .slice("file:".length)
      .split(",")
      .map((p) => p.trim());
    if (paths.some((p) => p === "")) throw new AsnSourceError("asn_source_config", `ASN_SOURCE ${spec}: empty file path`);
    return createFileSource(paths);
  }
  throw new AsnSourceError("asn_source_config", `ASN_SOURCE must be "ripestat" or "file:<path>", not "${spec}"`);
}

function checkAsn(asn: number): void {
  if (!Number.isInteger(asn) || asn < 1 || asn > 4294967295) throw new RangeError(`not an ASN: ${asn}`);
}

function createRipestatSource(client: OutboundClient, baseUrl: string, timeoutMs: number | undefined): AsnSource {
  const base = baseUrl.replace(/\/+$/, "");
  return {
    async announcedPrefixes(asn, options = {}) {
      checkAsn(asn);
      const response = await client.request(`${base}/data/announced-prefixes/data.json?resource=AS${asn}`, {
        headers: { accept: "application/json" },
        timeoutMs,
        signal: options.signal,
      });
      return parseRipestat(response.body.toString("utf8"), asn);
    },
    close: async () => {},
  };
}

/** RIPEstat's `{status: "ok", data: {resource, prefixes: [{prefix, timelines}]}}`. */
export function parseRipestat(text: string, asn: number): string[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new AsnSourceError("asn_source_malformed", `RIPEstat answer for AS${asn} is not JSON`, { cause: err });
  }
  if (!isObject(doc)) throw new AsnSourceError("asn_source_malformed", `RIPEstat answer for AS${asn} is not an object`);
  if (doc.status !== "ok") {
    const messages = Array.isArray(doc.messages) ? doc.messages.map((m) => (Array.isArray(m) ? m.join(": ") : String(m))) : [];
    const detail = messages.length > 0 ? `: ${messages.join("; ").slice(0, 300)}` : "";
    throw new AsnSourceError("asn_source_status", `RIPEstat answered status ${JSON.stringify(doc.status)} for AS${asn}${detail}`);
  }
  const data = doc.data;
  if (!isObject(data) || !Array.isArray(data.prefixes)) {
    throw new AsnSourceError("asn_source_malformed", `RIPEstat answer for AS${asn} has no data.prefixes`);
  }
  // A stale cache or a misrouted mirror could answer for another resource.
  if (data.resource !== undefined && String(data.resource).replace(/^as/i, "") !== String(asn)) {
    throw new AsnSourceError("asn_source_malformed", `RIPEstat answered for ${String(data.resource)}, not AS${asn}`);
  }
  const cidrs: CidrValue[] = [];
  for (const entry of data.prefixes) {
    if (!isObject(entry) || typeof entry.prefix !== "string") {
      throw new AsnSourceError("asn_source_malformed", `RIPEstat answer for AS${asn} has an entry without a prefix`);
    }
    const parsed = parseCidrValue(entry.prefix.trim());
    if (!parsed.ok) throw new AsnSourceError("asn_source_malformed", `RIPEstat answer for AS${asn} has a bad prefix "${entry.prefix.slice(0, 60)}"`);
    // Host bits in fetched data are masked, not rejected (real feeds contain them).
    cidrs.push(parsed.cidr);
  }
  return canonicalCidrs(cidrs);
}

function createFileSource(paths: string[]): AsnSource {
  // Loaded on first use and shared by every later call; a failed load is forgotten, so the next
  // refresh tries again (the file may appear or be fixed in between).
  let loading: Promise<AsnFileIndex> | null = null;
  const index = (): Promise<AsnFileIndex> => {
    loading ??= loadAsnFileIndex(paths).catch((err: unknown) => {
      loading = null;
      throw err;
    });
    return loading;
  };
  return {
    async announcedPrefixes(asn, options = {}) {
      checkAsn(asn);
      options.signal?.throwIfAborted();
      // The load is shared: one caller's cancellation stops its wait, not the load.
      const loaded = await (options.signal ? untilAborted(index(), options.signal) : index());
      return loaded.prefixesOf(asn);
    },
    close: async () => {
      loading = null;
    },
  };
}

function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
