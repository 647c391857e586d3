import { isIP } from "node:net";
import { AppError } from "@rlc/shared/errors";
import { buildPrefixIndex, canonicalCidr, type PrefixIndex } from "@rlc/shared/prefix";
import type { Db } from "../db/connect.js";
import { findDomainEntriesMatching, findIpRangeEntriesContaining, listLookupModules, type LookupModuleRow } from "../db/lookup.js";
import { findCurrentRevision } from "../db/revisions.js";
import { findSnapshotGeneration, listDomainAddresses, listTenantSnapshot } from "../db/snapshots.js";
import { normaliseDomain } from "../lib/domain-name.js";
import type { RevisionEntry } from "./revision-build.js";
import type { RevisionStore } from "./revision-store.js";

interface SnapshotItem {
  prefix: string;
  module_id: string;
  source: "asn" | "domain" | "ip_range" | "cdn";
  origin: string;
}

const byFamilyThenText = (a: string, b: string) => Number(a.includes(":")) - Number(b.includes(":")) || (a < b ? -1 : a > b ? 1 : 0);

const moduleFields = (m: LookupModuleRow) => ({
  module_id: m.id,
  module_name: m.name,
  module_type: m.type,
  enabled: m.enabled,
  community_id: m.community_id,
  community: m.community,
  community_title: m.community_title,
});

/**
 * Lookup (CONTRACT 5.5): entry, snapshot and revision layers; never a live DNS query.
 * The snapshot and revision layers answer from longest-match indexes built from the database
 * and kept per tenant until the tenant's snapshot generation (or current revision) changes.
 */
export function createLookupService(deps: { revisions: RevisionStore }) {
  const snapshotIndexes = new Map<string, { generation: number; index: PrefixIndex<SnapshotItem> }>();
  const revisionIndexes = new Map<string, { revisionId: number; index: PrefixIndex<RevisionEntry> }>();

  async function snapshotIndex(db: Db, tenantId: string) {
    const generation = await findSnapshotGeneration(db, tenantId);
    const hit = snapshotIndexes.get(tenantId);
    if (hit && hit.generation === generation) return hit.index;
    const index = buildPrefixIndex((await listTenantSnapshot(db, tenantId)) as SnapshotItem[]);
    snapshotIndexes.set(tenantId, { generation, index });
    return index;
  }

  async function revisionIndex(db: Db, tenantId: string) {
    const current = await findCurrentRevision(db, tenantId);
    if (!current) return null;
    const hit = revisionIndexes.get(tenantId);
    if (hit && hit.revisionId === current.revision_id) return { revisionId: current.revision_id, index: hit.index };
    const content = await deps.revisions.content(db, tenantId, current.revision_id);
    const index = buildPrefixIndex([...(content?.v4 ?? []), ...(content?.v6 ?? [])], (e) => e[0]);
    revisionIndexes.set(tenantId, { revisionId: current.revision_id, index });
    return { revisionId: current.revision_id, index };
  }

  return {
    async lookup(db: Db, tenantId: string, q: string) {
      const query = q.trim();
      const family = isIP(query);
      const modules = await listLookupModules(db, tenantId);
      const matches: Record<string, unknown>[] = [];
      if (family) {
        const normalized = canonicalCidr(query).split("/")[0]!;
        for (const e of await findIpRangeEntriesContaining(db, tenantId, normalized)) {
          const m = modules.get(e.module_id);
          if (m) matches.push({ layer: "entry", ...moduleFields(m), entry_id: e.id, value: e.cidr });
        }
        for (const s of (await snapshotIndex(db, tenantId)).lookup(normalized)) {
          const m = modules.get(s.module_id);
          if (m) matches.push({ layer: "snapshot", ...moduleFields(m), prefix: s.prefix, source: s.source, origin: s.origin });
        }
        const rev = await revisionIndex(db, tenantId);
        const best = rev?.index.longest(normalized);
        return {
          query: q,
          kind: "ip" as const,
          normalized,
          matched: matches.length > 0 || best !== undefined,
          matches,
          revision: rev && best ? { revision_id: rev.revisionId, prefix: best[0], communities: best[1] } : null,
        };
      }
      const domain = normaliseDomain(query);
      if (!domain.ok) {
        throw new AppError("validation_failed", `q must be an IPv4 or IPv6 address or a domain name: ${domain.message}`, {
          errors: [{ path: "query.q", message: domain.message }],
        });
      }
      const name = domain.value;
      const labels = name.split(".");
      const parents = labels.slice(1, -1).map((_, i) => labels.slice(i + 1).join("."));
      const entries = await findDomainEntriesMatching(db, tenantId, name, parents);
      for (const e of entries) {
        const m = modules.get(e.module_id);
        if (m) matches.push({ layer: "entry", ...moduleFields(m), entry_id: e.id, value: e.domain });
      }
      const byModule = new Map<string, Set<string>>();
      for (const e of entries) {
        if (!byModule.has(e.module_id)) byModule.set(e.module_id, new Set());
        byModule.get(e.module_id)!.add(e.domain);
      }
      const rows = await listDomainAddresses(db, [...byModule.keys()], [...new Set(entries.map((e) => e.domain))]);
      const addresses = new Map<string, string[]>();
      for (const r of rows) {
        if (!byModule.get(r.module_id)?.has(r.origin)) continue;
        const list = addresses.get(r.module_id) ?? [];
        list.push(r.prefix.slice(0, r.prefix.indexOf("/")));
        addresses.set(r.module_id, list);
      }
      for (const [moduleId, list] of addresses) {
        const m = modules.get(moduleId);
        if (m) matches.push({ layer: "snapshot", ...moduleFields(m), source: "domain", origin: name, addresses: [...new Set(list)].sort(byFamilyThenText) });
      }
      return { query: q, kind: "domain" as const, normalized: name, matched: matches.length > 0, matches, revision: null };
    },
  };
}
