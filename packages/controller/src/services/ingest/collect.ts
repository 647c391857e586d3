import type { Db } from "../../db/connect.js";
import {
  type IngestModuleRow,
  listEnabledCdnSources,
  listModuleAsns,
  listModuleCountries,
  listModuleDohProfiles,
  listModuleDomains,
  listModuleIpRanges,
} from "../../db/ingest-inputs.js";
import { findSnapshotGroup, listSnapshotGroups, type SnapshotGroup, type SnapshotSource } from "../../db/snapshots.js";
import { mapLimit } from "../../lib/map-limit.js";
import type { SecretBox } from "../../lib/secret-box.js";
import type { AsnSource } from "../../sources/asn-source.js";
import { parseJsonFeed, parseTextFeed } from "../../sources/cdn-parse.js";
import type { CountrySource } from "../../sources/country-source.js";
import type { DohResolverPolicy } from "../../sources/doh-lookup.js";
import { resolveDomains } from "../../sources/doh-resolver.js";
import type { IrrSession } from "../../sources/irr-source.js";
import type { OutboundClient } from "../../sources/outbound.js";
import { type AsSetOutcome, collectAsSets } from "./collect-as-sets.js";
import { openHeaders } from "./doh-profiles.js";

export interface CollectDeps {
  outbound: OutboundClient;
  asnSource: AsnSource | null;
  /** The refresh's IRR session, which expands AS-SET entries (`IRR_SOURCE`); null or absent = none configured. */
  irr?: IrrSession | null;
  /** Where COUNTRY modules' address space comes from (`COUNTRY_SOURCE`); null or absent = none configured. */
  countrySource?: CountrySource | null;
  /** Opens the DoH profiles' sealed header values, sent with each query. */
  services: { secretBox: SecretBox };
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
  /** One per source that gave (or kept) prefixes: the rows of the module's next snapshot. */
  groups: SnapshotGroup[];
  sources_ok: number;
  sources_failed: number;
  /** Sources whose kept records were older than the module's budget and dropped (stale-sources.ts). */
  sources_stale: number;
  warnings: CollectWarning[];
  cdn: { id: string; ok: boolean; error: string | null; prefix_count: number | null }[];
  /** AS_PREFIXES: each AS-SET entry's expansion. */
  as_sets?: AsSetOutcome[];
}

const DEFAULT_POLICY: DohResolverPolicy = { strategy: "failover", record_types: ["A", "AAAA"], timeout_ms: 3000, attempts: 2, keep_previous_minutes: 1440 };

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));
const hostPrefix = (address: string) => (address.includes(":") ? `${address}/128` : `${address}/32`);

/**
 * The same texts, cut from one joined string. A text a source formatted (a template literal of
 * 13 characters or more, as most IPv4 prefixes are) is a V8 cons string, and the revision built
 * from the module keeps the source's own texts: every later comparison of two texts then walks
 * them piece by piece. At 1.2M the full path's guard aligned the contents in 1.4 s with them
 * and 0.1 s with flat ones; the join and the split cost ~0.1 s there, ~5 ms for one 60k feed.
 * collectModule gives its groups' texts flat, so that the formatted ones are garbage at once
 * rather than held beside their copies until the snapshots are written. (Prefix texts hold no newline.)
 */
export function flatTexts(texts: string[]): string[] {
  return texts.length > 0 ? texts.join("\n").split("\n") : texts;
}

/**
 * Every prefix of the collected groups, in group order (duplicates across sources included): a
 * new array, copied by concat (a 60k feed's push by push took ~15 ms on a busy machine, concat
 * ~2 ms), a thousand groups a call (an argument list has a limit).
 */
export function collectedPrefixes(c: CollectedModule): string[] {
  let out: string[] = [];
  for (let i = 0; i < c.groups.length; i += 1000) out = out.concat(...c.groups.slice(i, i + 1000).map((g) => g.prefixes));
  return out;
}

/**
 * Collects one module afresh: IP ranges as they are, each ASN's announced
 * prefixes, each country's address space, each domain's addresses through the module's DoH profiles, each enabled CDN
 * source. A source that fails keeps its group of the previous snapshot (read from the
 * database only then) and is reported as a warning; one failing source never fails the others.
 */
export async function collectModule(db: Db, deps: CollectDeps, module: IngestModuleRow, now: Date, signal: AbortSignal): Promise<CollectedModule> {
  const groups: SnapshotGroup[] = [];
  // Groups whose texts are flat already (a feed's parse gives them so): flatTexts skips them.
  const flat = new Set<SnapshotGroup>();
  const warnings: CollectWarning[] = [];
  const cdn: CollectedModule["cdn"] = [];
  let ok = 0;
  let failed = 0;
  const limit = deps.concurrency ?? 8;
  const keepPrevious = async (source: SnapshotSource, origin: string) => {
    const previous = await findSnapshotGroup(db, module.id, source, origin);
    if (previous) groups.push(previous);
  };
  const fail = (source: string, message: string) => {
    failed++;
    warnings.push({ module_id: module.id, source, message });
  };

  // Every module's CDN sources are read beside the entries read before them (one round trip less).
  const cdnSources = listEnabledCdnSources(db, module.id);
  cdnSources.catch(() => {}); // rethrown where awaited
  for (const entry of await listModuleIpRanges(db, module.id)) {
    groups.push({ source: "ip_range", origin: entry.id, prefixes: [entry.cidr], seen_at: null });
  }

  const asns = module.type === "AS_PREFIXES" ? await listModuleAsns(db, module.id) : [];
  await mapLimit(asns, limit, async (asn) => {
    const origin = String(asn);
    try {
      if (!deps.asnSource) throw new Error("no ASN source is configured (ASN_SOURCE)");
      groups.push({ source: "asn", origin, prefixes: await deps.asnSource.announcedPrefixes(asn, { signal }), seen_at: null });
      ok++;
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      fail(`asn:${asn}`, messageOf(err));
      await keepPrevious("asn", origin);
    }
  });

  let asSets: AsSetOutcome[] | undefined;
  if (module.type === "AS_PREFIXES") {
    const sets = await collectAsSets(db, { asnSource: deps.asnSource, irr: deps.irr ?? null, concurrency: limit }, module.id, signal);
    groups.push(...sets.groups);
    for (const w of sets.warnings) warnings.push({ module_id: module.id, ...w });
    ok += sets.ok;
    failed += sets.failed;
    if (sets.as_sets.length) asSets = sets.as_sets;
  }

  const countries = module.type === "COUNTRY" ? await listModuleCountries(db, module.id) : [];
  await mapLimit(countries, limit, async (country) => {
    try {
      if (!deps.countrySource) throw new Error("no country source is configured (COUNTRY_SOURCE)");
      groups.push({ source: "country", origin: country, prefixes: await deps.countrySource.prefixesOf(country, { signal }), seen_at: null });
      ok++;
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      fail(`country:${country}`, messageOf(err));
      await keepPrevious("country", country);
    }
  });

  if (module.type === "DOMAINS") {
    const domains = await listModuleDomains(db, module.id);
    if (domains.length) {
      const profiles = await listModuleDohProfiles(db, module.id);
      const policy = { ...DEFAULT_POLICY, ...(module.doh_resolver_policy as Partial<DohResolverPolicy>) };
      if (!profiles.length) {
        for (const d of domains) {
          fail(`domain:${d.name}`, "the module has no DoH profile");
          await keepPrevious("domain", d.name);
        }
      } else {
        const previousGroups = await listSnapshotGroups(db, module.id, "domain");
        const previous = previousGroups.flatMap((g) =>
          g.prefixes.map((p, i) => ({ domain: g.origin, address: p.slice(0, p.indexOf("/")), last_seen_at: new Date(g.seen_at?.[i] ?? now.getTime()) })),
        );
        const resolved = await resolveDomains(
          { client: deps.outbound, concurrency: 16 },
          {
            domains,
            profiles: profiles.map((p) => ({ ...p, name: p.name ?? p.id, headers: openHeaders(deps.services.secretBox, p) })),
            policy,
            previous,
            now,
            signal,
          },
        );
        const byDomain = new Map<string, SnapshotGroup>();
        for (const r of resolved.records) {
          let g = byDomain.get(r.domain);
          if (!g) byDomain.set(r.domain, (g = { source: "domain", origin: r.domain, prefixes: [], seen_at: [] }));
          g.prefixes.push(hostPrefix(r.address));
          g.seen_at!.push(r.last_seen_at.getTime());
        }
        groups.push(...byDomain.values());
        for (const d of resolved.perDomain) {
          if (d.ok) ok++;
          else {
            fail(`domain:${d.domain}`, d.error ?? "resolution failed");
            // What a failed domain keeps dates from its last good resolution.
            const g = byDomain.get(d.domain);
            if (g) g.refreshed_at = previousGroups.find((p) => p.origin === d.domain)?.refreshed_at ?? null;
          }
        }
      }
    }
  }

  const sources = await cdnSources;
  await mapLimit(sources, limit, async (source) => {
    try {
      const res = await deps.outbound.request(source.url, { signal });
      const parsed = source.format === "json" ? parseJsonFeed(res.body.toString("utf8"), source.json_path ?? "") : parseTextFeed(res.body.toString("utf8"));
      if (parsed.prefixes.length === 0 && !source.allow_empty) throw new Error("empty");
      const group: SnapshotGroup = { source: "cdn", origin: source.id, prefixes: parsed.prefixes, seen_at: null };
      groups.push(group);
      flat.add(group);
      cdn.push({ id: source.id, ok: true, error: null, prefix_count: parsed.prefixes.length });
      ok++;
    } catch (err) {
      if (signal.aborted) throw signal.reason ?? err;
      const message = messageOf(err);
      cdn.push({ id: source.id, ok: false, error: message, prefix_count: null });
      fail(`cdn:${source.id}`, message);
      await keepPrevious("cdn", source.id);
    }
  });

  // Flat texts from here on (flatTexts), the formatted ones left to the collector. A feed's
  // texts are flat as parsed (FeedParseResult): ~10 ms a 60k feed not spent joining and splitting.
  for (const g of groups) if (!flat.has(g)) g.prefixes = flatTexts(g.prefixes);
  return { module_id: module.id, groups, sources_ok: ok, sources_failed: failed, sources_stale: 0, warnings, cdn, ...(asSets ? { as_sets: asSets } : {}) };
}
