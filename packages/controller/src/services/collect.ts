import type { Db } from "../db/connect.js";
import {
  type IngestModuleRow,
  listEnabledCdnSources,
  listModuleAsns,
  listModuleDohProfiles,
  listModuleDomains,
  listModuleIpRanges,
} from "../db/ingest-inputs.js";
import type { SnapshotRecord } from "../db/snapshots.js";
import type { AsnSource } from "../sources/asn-source.js";
import { parseJsonFeed, parseTextFeed } from "../sources/cdn-parse.js";
import type { DohResolverPolicy } from "../sources/doh-lookup.js";
import { resolveDomains } from "../sources/doh-resolver.js";
import type { OutboundClient } from "../sources/outbound.js";

export interface CollectDeps {
  outbound: OutboundClient;
  asnSource: AsnSource | null;
  /** Sources fetched at once within a module. Default 8. */
  concurrency?: number;
}

export interface CollectWarning {
  module_id: string;
  source: string;
  message: string;
}

export interface CollectedModule {
  module_id: string;
  records: SnapshotRecord[];
  sources_ok: number;
  sources_failed: number;
  warnings: CollectWarning[];
  cdn: { id: string; ok: boolean; error: string | null; prefix_count: number | null }[];
}

const DEFAULT_POLICY: DohResolverPolicy = { strategy: "failover", record_types: ["A", "AAAA"], timeout_ms: 3000, attempts: 2, keep_previous_minutes: 1440 };

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
const hostPrefix = (address: string) => (address.includes(":") ? `${address}/128` : `${address}/32`);

/**
 * Collects one module afresh (CONTRACT 3.3): IP ranges as they are, each ASN's announced
 * prefixes, each domain's addresses through the module's DoH profiles, each enabled CDN
 * source. A source that fails keeps its records of the previous snapshot and is reported as a
 * warning; one failing source never fails the others.
 */
export async function collectModule(
  db: Db,
  deps: CollectDeps,
  module: IngestModuleRow,
  previous: readonly SnapshotRecord[],
  now: Date,
  signal: AbortSignal,
): Promise<CollectedModule> {
  const records: SnapshotRecord[] = [];
  const warnings: CollectWarning[] = [];
  const cdn: CollectedModule["cdn"] = [];
  let ok = 0;
  let failed = 0;
  const limit = deps.concurrency ?? 8;
  const keepPrevious = (source: SnapshotRecord["source"], origin: string) => {
    for (const r of previous) if (r.source === source && r.origin === origin) records.push(r);
  };
  const fail = (source: string, message: string) => {
    failed++;
    warnings.push({ module_id: module.id, source, message });
  };

  for (const entry of await listModuleIpRanges(db, module.id)) {
    records.push({ prefix: entry.cidr, source: "ip_range", origin: entry.id, last_seen_at: now });
  }

  const asns = module.type === "AS_PREFIXES" ? await listModuleAsns(db, module.id) : [];
  await mapLimit(asns, limit, async (asn) => {
    const origin = String(asn);
    try {
      if (!deps.asnSource) throw new Error("no ASN source is configured (ASN_SOURCE)");
      const prefixes = await deps.asnSource.announcedPrefixes(asn, { signal });
      for (const p of prefixes) records.push({ prefix: p, source: "asn", origin, last_seen_at: now });
      ok++;
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      fail(`asn:${asn}`, messageOf(err));
      keepPrevious("asn", origin);
    }
  });

  if (module.type === "DOMAINS") {
    const domains = await listModuleDomains(db, module.id);
    if (domains.length) {
      const profiles = await listModuleDohProfiles(db, module.id);
      const policy = { ...DEFAULT_POLICY, ...(module.doh_resolver_policy as Partial<DohResolverPolicy>) };
      const previousDomains = previous
        .filter((r) => r.source === "domain")
        .map((r) => ({ domain: r.origin, address: r.prefix.slice(0, r.prefix.indexOf("/")), last_seen_at: new Date(r.last_seen_at) }));
      if (!profiles.length) {
        for (const d of domains) {
          fail(`domain:${d.name}`, "the module has no DoH profile");
          keepPrevious("domain", d.name);
        }
      } else {
        const resolved = await resolveDomains(
          { client: deps.outbound, concurrency: 16 },
          { domains, profiles: profiles.map((p) => ({ ...p, name: p.name ?? p.id })), policy, previous: previousDomains, now, signal },
        );
        for (const r of resolved.records) records.push({ prefix: hostPrefix(r.address), source: "domain", origin: r.domain, last_seen_at: r.last_seen_at });
        for (const d of resolved.perDomain) {
          if (d.ok) ok++;
          else fail(`domain:${d.domain}`, d.error ?? "resolution failed");
        }
      }
    }
  }

  const sources = await listEnabledCdnSources(db, module.id);
  await mapLimit(sources, limit, async (source) => {
    try {
      const res = await deps.outbound.request(source.url, { signal });
      const text = res.body.toString("utf8");
      const parsed = source.format === "json" ? parseJsonFeed(text, source.json_path ?? "") : parseTextFeed(text);
      if (parsed.prefixes.length === 0 && !source.allow_empty) throw new Error("empty");
      for (const p of parsed.prefixes) records.push({ prefix: p, source: "cdn", origin: source.id, last_seen_at: now });
      cdn.push({ id: source.id, ok: true, error: null, prefix_count: parsed.prefixes.length });
      ok++;
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      const message = messageOf(err);
      cdn.push({ id: source.id, ok: false, error: message, prefix_count: null });
      fail(`cdn:${source.id}`, message);
      keepPrevious("cdn", source.id);
    }
  });

  return { module_id: module.id, records, sources_ok: ok, sources_failed: failed, warnings, cdn };
}
