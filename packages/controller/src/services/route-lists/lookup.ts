import { isIP } from "node:net";
import { AppError } from "@rlc/shared/errors";
import { type Address, buildPrefixIndex, buildPrefixTextIndex, formatAddress, type PrefixIndex, type PrefixTextIndex, parseAddress } from "@rlc/shared/prefix";
import type { Db } from "../../db/connect.js";
import {
  findDomainEntriesMatching,
  findLookupVersion,
  type LookupModuleRow,
  type LookupVersion,
  listLookupModules,
  listTenantIpRangeEntries,
} from "../../db/lookup.js";
import { findSettings } from "../../db/settings.js";
import { listDomainAddresses, listTenantSnapshotGroups, type SnapshotSource } from "../../db/snapshots.js";
import { normaliseDomain } from "../../lib/domain-name.js";
import type { RpkiValidator } from "../../sources/rpki-source.js";
import type { RevisionStore } from "../revisions/revision-store.js";
import { answerLookup, type BogonRules, type CollectedMatch } from "./lookup-answer.js";
import { entryMatch, moduleFields, rpkiOf } from "./lookup-matches.js";
import { longestInLayer, nextRevisionLayer, type RevisionLayer } from "./lookup-revision.js";

const byFamilyThenText = (a: string, b: string) => Number(a.includes(":")) - Number(b.includes(":")) || (a < b ? -1 : a > b ? 1 : 0);

/**
 * Every snapshot prefix of a tenant: prefix i came from group groupOf[i]; its text is
 * index.text(i). Typed arrays only, no string a prefix (see PrefixTextIndex).
 */
interface SnapshotIndex {
  groupOf: Uint32Array;
  groups: { module_id: string; source: SnapshotSource; origin: string; via?: string }[];
  index: PrefixTextIndex;
}

/**
 * What lookups of one tenant answer from, built from the database and rebuilt part by part
 * when `findLookupVersion` says that part changed. The snapshot and revision indexes are built
 * on the first IP lookup that needs them (a tenant asked only about domains never pays).
 */
interface TenantView {
  version: LookupVersion;
  modules: Map<string, LookupModuleRow>;
  entries: PrefixIndex<{ id: string; module_id: string; cidr: string }>;
  snapshot: Lazy<SnapshotIndex>;
  /** Carried from the last revision's by the change between them when it can be (lookup-revision.ts). */
  revision: Lazy<RevisionLayer | null>;
  /**
   * The tenant's bogon rules (`BIRD` settings), read with the view whenever the revision changes
   * (one small query): they say why a collected address is not announced, and a lookup never
   * queries for them.
   */
  bogonRules: BogonRules;
}

/** Built on first use, shared by every view of the same version; a failed build is tried again. */
class Lazy<T> {
  private pending: Promise<T> | null = null;
  /** The built value, once there is one (the cache's memory estimate reads it). */
  value: T | undefined;
  constructor(
    private readonly build: () => Promise<T>,
    private readonly onBuilt: () => void = () => {},
  ) {}

  get(): Promise<T> {
    if (!this.pending) {
      const p = this.build();
      this.pending = p;
      p.then(
        (v) => {
          this.value = v;
          this.onBuilt();
        },
        () => {
          if (this.pending === p) this.pending = null;
        },
      );
    }
    return this.pending;
  }
}

/**
 * Rough bytes a view holds, for the cache's budget: the snapshot and revision indexes count
 * what they hold (typed arrays, ~40 bytes an IPv4 prefix and ~80 an IPv6 one, plus the few
 * texts kept as given) and their group or tag column; per entry, module, snapshot group or
 * revision tag a little more (a few strings each).
 */
const BYTES_PER_ENTRY = 200;
function estimateBytes(view: TenantView): number {
  const snapshot = view.snapshot.value;
  const revision = view.revision.value;
  let bytes = (view.entries.size + view.modules.size) * BYTES_PER_ENTRY;
  if (snapshot) bytes += snapshot.index.bytes + snapshot.groupOf.byteLength + snapshot.groups.length * BYTES_PER_ENTRY;
  if (revision) bytes += revision.bytes;
  return bytes;
}

/** Default memory budget of all tenants' lookup views together (LOOKUP_CACHE_MAX_MB). */
export const DEFAULT_LOOKUP_BUDGET_BYTES = 1024 * 1024 * 1024;

/**
 * How long a tenant's view is used without asking the database whether it changed. Writes
 * invalidate it at once (see `invalidate`); this only bounds what a missed notice costs.
 */
export const LOOKUP_STALENESS_MS = 1000;

/** Published by a replica that changed what lookups of a tenant answer from. */

async function buildSnapshotIndex(db: Db, tenantId: string): Promise<SnapshotIndex> {
  const rows = await listTenantSnapshotGroups(db, tenantId);
  const prefixes: string[] = []; // only while the index is built
  const groupOf = new Uint32Array(rows.reduce((n, r) => n + r.prefixes.length, 0));
  rows.forEach((r, g) => {
    groupOf.fill(g, prefixes.length, prefixes.length + r.prefixes.length);
    for (const p of r.prefixes) prefixes.push(p);
  });
  const index = buildPrefixTextIndex(prefixes);
  return { groupOf, groups: rows.map((r) => ({ module_id: r.module_id, source: r.source, origin: r.origin, ...(r.via ? { via: r.via } : {}) })), index };
}

/**
 * Lookup: entry, snapshot and revision layers; never a live DNS query.
 *
 * An IP lookup answers from memory: per tenant, the modules, an index of the IP_RANGES entries,
 * of every snapshot prefix and of the current revision. Read-your-writes: a write through this
 * process's API, or a job's end, marks the tenant's view stale at once (`invalidate`), and the
 * bus carries the same notice to every other replica (`internalSubjects.lookupChanged`, the jobs' finish
 * notices); the next lookup revalidates with one small query (findLookupVersion) and rebuilds
 * only what changed. Without a notice the view is revalidated at most once every
 * LOOKUP_STALENESS_MS (a safety net for a lost notice), so most requests make no query at all.
 * The views are kept least-recently-used first within a memory budget: a tenant not asked for
 * a while gives way when the estimate (estimateBytes) of all views passes it.
 * Measured in the bench (1.2M snapshot and 1.07M revision prefixes): the four queries a request
 * made before (modules, entries, generation, current revision) held the route to 926-1,549
 * req/s; now 2,600-3,200 req/s, 72-90% of /v1/auth/session, which only authenticates (two
 * queries a request) and so bounds every /v1 route.
 * The snapshot and revision indexes hold typed arrays only (PrefixTextIndex): no string or
 * object a prefix; a match's text is written when a lookup answers with it, and a revision
 * prefix's communities come from the content's tag column (the content itself is left to the
 * revision store). Measured for 1.2M snapshot prefixes (bench/lookup-view-heap.mjs): a string
 * a prefix and an index over their positions held 90 MiB of JS heap plus 32 MiB of typed
 * arrays, and a full collection with that view alive took 125-196 ms; now 0.2 MiB of heap and
 * 43.5 MiB of typed arrays, and 4-13 ms. The lookup's p99 in refresh-lookup.mjs did not move
 * with it: no full collection ran during its lookup rounds, before or after; the pauses there
 * are scavenges of the young generation (6-8 ms each on the 2-core machine under load), about
 * as many a second for the bare route as for this one. A larger young generation
 * (--max-semi-space-size=64) made them 4x rarer but 3-6x longer: both routes' p99 rose (the
 * ratio fell only because the bare route's rose with it), so it is not used.
 * A new revision does not rebuild the revision layer when the layer's own content is still in
 * memory (the revision store keeps the last few): it is carried over by the change between the
 * two contents (lookup-revision.ts).
 * Domain lookups still read their entries and addresses from the database (small indexed reads).
 */
export function createLookupService(deps: {
  sql: Db;
  revisions: RevisionStore;
  now?: () => number;
  budgetBytes?: number;
  /** Gives snapshot matches of an ASN origin their RPKI state (`RPKI_VRP_SOURCE`). */
  rpki?: RpkiValidator | null;
}) {
  const now = deps.now ?? Date.now;
  const budget = deps.budgetBytes ?? DEFAULT_LOOKUP_BUDGET_BYTES;
  /** `usedAt`: the tick of the slot's last lookup, its recency for eviction. */
  type Slot = { view: TenantView | null; checkedAt: number; pending: Promise<TenantView> | null; generation: number; usedAt: number };
  const views = new Map<string, Slot>();
  /**
   * Recency is a tick a lookup writes in its slot, not the Map's order: moving the tenant to the
   * Map's end on every lookup (a delete and a set) was a fifth of a fresh lookup's own time,
   * for an order only the rare eviction reads.
   */
  let tick = 0;
  /** The tenants from the least to the most recently used. */
  const byRecency = () => [...views].sort((a, b) => a[1].usedAt - b[1].usedAt);

  /** Drops the least recently used views until the estimate fits the budget (never `keep`). */
  function enforceBudget(keep: string) {
    let total = 0;
    for (const slot of views.values()) if (slot.view) total += estimateBytes(slot.view);
    if (total <= budget) return;
    for (const [tenantId, slot] of byRecency()) {
      if (total <= budget) break;
      if (tenantId === keep) continue;
      if (slot.view) total -= estimateBytes(slot.view);
      views.delete(tenantId);
    }
  }

  async function revalidate(db: Db, tenantId: string, old: TenantView | null): Promise<TenantView> {
    const version = await findLookupVersion(db, tenantId);
    const sameConfig = old !== null && old.version.config === version.config;
    const view: TenantView = {
      version,
      modules: sameConfig ? old.modules : await listLookupModules(db, tenantId),
      entries: sameConfig ? old.entries : buildPrefixIndex(await listTenantIpRangeEntries(db, tenantId), (e) => e.cidr),
      snapshot:
        old && old.version.snapshot_generation === version.snapshot_generation
          ? old.snapshot
          : new Lazy(
              () => buildSnapshotIndex(db, tenantId),
              () => enforceBudget(tenantId),
            ),
      revision:
        old && old.version.revision_id === version.revision_id
          ? old.revision
          : new Lazy(
              () => revisionLayer(db, tenantId, version.revision_id, old?.revision.value ?? null),
              () => enforceBudget(tenantId),
            ),
      bogonRules:
        old && old.version.revision_id === version.revision_id ? old.bogonRules : (((await findSettings(db, tenantId)).settings.BIRD ?? {}) as BogonRules),
    };
    return view;
  }

  /** The layer of revision `id`: `previous` carried over by the change when it can be, else built whole. */
  async function revisionLayer(db: Db, tenantId: string, id: number | null, previous: RevisionLayer | null): Promise<RevisionLayer | null> {
    if (id === null) return null;
    const content = await deps.revisions.content(db, tenantId, id);
    return content ? nextRevisionLayer(previous, id, content) : null;
  }

  /**
   * The tenant's view, revalidated when it was invalidated or is older than LOOKUP_STALENESS_MS;
   * the view itself, not a promise, when it is fresh.
   */
  function viewOf(db: Db, tenantId: string): TenantView | Promise<TenantView> {
    let slot = views.get(tenantId);
    if (!slot) views.set(tenantId, (slot = { view: null, checkedAt: 0, pending: null, generation: 0, usedAt: 0 }));
    slot.usedAt = ++tick;
    const started = now();
    const age = started - slot.checkedAt;
    if (slot.view && age < LOOKUP_STALENESS_MS) {
      // Past half its age limit, a view in use is revalidated in the background while it keeps
      // answering: under steady traffic no lookup waits for that query (it set the p99).
      if (age >= LOOKUP_STALENESS_MS / 2 && !slot.pending) void revalidateSlot(db, tenantId, slot, started).catch(() => {});
      return slot.view;
    }
    return revalidateSlot(db, tenantId, slot, started);
  }

  /** One revalidation of a slot at a time; lookups that need it wait for the same one. */
  function revalidateSlot(db: Db, tenantId: string, slot: Slot, started: number): Promise<TenantView> {
    const s = slot;
    if (!s.pending) {
      const generation = s.generation;
      const p = revalidate(db, tenantId, s.view).then((view) => {
        // A write noticed while this read ran may be missing from it: it answers this request
        // (which began before the notice) but is not kept as fresh.
        if (s.generation === generation) {
          s.view = view;
          s.checkedAt = started;
        } else if (!s.view) s.view = view;
        return view;
      });
      s.pending = p;
      p.finally(() => {
        if (s.pending === p) s.pending = null;
      }).catch(() => {});
      p.then(() => enforceBudget(tenantId)).catch(() => {});
    }
    return s.pending;
  }

  /**
   * An IP lookup: answered at once, with no promise made along the way, when the view is fresh
   * and its layers are built (the common case: a lookup's own work is a few µs, so the promises
   * and awaits around it were much of its cost and of the young-generation garbage that sets the
   * route's p99); otherwise once the view is revalidated and its layers built.
   */
  function lookupIp(db: Db, tenantId: string, q: string, query: string) {
    const address: Address = parseAddress(query);
    const normalized = formatAddress(address);
    const view = viewOf(db, tenantId);
    if (!(view instanceof Promise) && view.snapshot.value !== undefined && view.revision.value !== undefined) {
      return answerIp(view, view.snapshot.value, view.revision.value, q, normalized, address);
    }
    return (async () => {
      const v = await view;
      const [snapshot, rev] = await Promise.all([v.snapshot.get(), v.revision.get()]);
      return answerIp(v, snapshot, rev, q, normalized, address);
    })();
  }

  function answerIp(view: TenantView, snapshot: SnapshotIndex, rev: RevisionLayer | null, q: string, normalized: string, address: Address) {
    const matches: Record<string, unknown>[] = [];
    const collected: CollectedMatch[] = [];
    for (const e of view.entries.lookup(address)) {
      const m = view.modules.get(e.module_id);
      if (m) matches.push(entryMatch(m, e.id, e.cidr));
    }
    for (const i of snapshot.index.lookup(address)) {
      const g = snapshot.groups[snapshot.groupOf[i]!]!;
      const m = view.modules.get(g.module_id);
      if (!m) continue;
      const prefix = snapshot.index.text(i);
      collected.push({ module_id: m.id, module_name: m.name, enabled: m.enabled, action: m.action, prefix });
      matches.push({
        layer: "snapshot",
        ...moduleFields(m),
        prefix,
        source: g.source,
        origin: g.origin,
        ...(g.via ? { via: g.via } : {}),
        ...rpkiOf(deps.rpki, g, prefix),
      });
    }
    const revision = rev ? longestInLayer(rev, address) : null;
    const answer = answerLookup(address, revision, collected, () => view.bogonRules);
    // Written out rather than spread: the answer is made on every lookup.
    return {
      query: q,
      kind: "ip" as const,
      normalized,
      matched: matches.length > 0 || revision !== null,
      matches,
      revision,
      announced: answer.announced,
      announced_prefix: answer.announced_prefix,
      communities: answer.communities,
      excluded_by: answer.excluded_by,
      answer: answer.answer,
    };
  }

  async function lookupDomain(db: Db, tenantId: string, q: string, query: string) {
    const domain = normaliseDomain(query);
    if (!domain.ok) {
      throw new AppError("validation_failed", `q must be an IPv4 or IPv6 address or a domain name: ${domain.message}`, {
        errors: [{ path: "query.q", message: domain.message }],
      });
    }
    const { modules } = await viewOf(db, tenantId);
    const matches: Record<string, unknown>[] = [];
    const name = domain.value;
    const labels = name.split(".");
    const parents = labels.slice(1, -1).map((_, i) => labels.slice(i + 1).join("."));
    const entries = await findDomainEntriesMatching(db, tenantId, name, parents);
    for (const e of entries) {
      const m = modules.get(e.module_id);
      if (m) matches.push(entryMatch(m, e.id, e.domain));
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
    const answer = matches.length ? "a domain: look up its addresses to see whether they are announced" : "not announced: in no list";
    return {
      query: q,
      kind: "domain" as const,
      normalized: name,
      matched: matches.length > 0,
      matches,
      revision: null,
      ...{ announced: null, announced_prefix: null, communities: [], excluded_by: [], answer },
    };
  }

  return {
    /**
     * Marks a tenant's view stale: the next lookup asks the database. Called for this process's
     * writes and for the notices of other replicas' (see startLookupInvalidation).
     */
    invalidate(tenantId: string) {
      const slot = views.get(tenantId);
      if (!slot) return;
      slot.checkedAt = Number.NEGATIVE_INFINITY;
      slot.generation++;
      slot.pending = null; // a read begun before the write must not answer the lookups after it
    },
    /** Views held and their estimated bytes (tests and the budget). */
    cacheStats() {
      let bytes = 0;
      for (const slot of views.values()) if (slot.view) bytes += estimateBytes(slot.view);
      return { tenants: byRecency().map(([tenantId]) => tenantId), bytes, budget };
    },
    /** `GET /v1/lookup`: an address or a domain in the tenant's lists (read on the service's pool). */
    lookup(tenantId: string, q: string) {
      const query = q.trim();
      return isIP(query) ? lookupIp(deps.sql, tenantId, q, query) : lookupDomain(deps.sql, tenantId, q, query);
    },
  };
}
