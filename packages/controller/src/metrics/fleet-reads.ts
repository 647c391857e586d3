import type { Clock } from "@rlc/shared/time";
import { Counter } from "prom-client";
import type { Sql } from "../db/connect.js";
import {
  type ActiveJobsRow,
  countActiveJobs,
  countModulesWithRefreshErrors,
  countSpeakersBySyncInputs,
  findAuditOutboxBacklog,
  type LatestRevisionRow,
  listLatestRevisions,
  listSpeakerReportTimes,
  listTenantNames,
  type SpeakerReportRow,
  type SpeakerSyncGroupRow,
} from "../db/fleet-metrics.js";
import { syncStatusOf } from "../lib/speaker-sync.js";
import { cachedBy, within } from "./scrape-cache.js";

/** How long one answer of a query serves scrapes: a scrape storm costs one query per figure per window. */
export const FLEET_CACHE_MS = 2000;
/** A query slower than this is given up for the scrape (Prometheus's default scrape timeout is 10 s). */
export const FLEET_QUERY_TIMEOUT_MS = 5000;
/** At most this many speakers (and tenants) get a series of their own; the fleet's size stays bounded on a scrape. */
export const FLEET_SERIES_LIMIT = 10_000;

export const SYNC_STATUSES = ["in_sync", "out_of_sync", "unknown", "error"] as const;
export type SyncStatus = (typeof SYNC_STATUSES)[number];

/** Whose rows a read covers: one tenant's id, or null for every tenant. */
export type TenantScope = string | null;

/** What the scrapes read of the shared state, each figure from one cached query per scope; null: the query failed. */
export interface FleetReads {
  jobs(scope: TenantScope): Promise<ActiveJobsRow[] | null>;
  /** Speakers by tenant and sync_status, every status present (0 when none). */
  speakers(scope: TenantScope): Promise<Map<string, Record<SyncStatus, number>> | null>;
  reports(scope: TenantScope): Promise<SpeakerReportRow[] | null>;
  revisions(scope: TenantScope): Promise<LatestRevisionRow[] | null>;
  failingModules(scope: TenantScope): Promise<{ tenant_id: string; count: number }[] | null>;
  tenants(scope: TenantScope): Promise<{ id: string; name: string }[] | null>;
  /** The audit outbox is the deployment's: no scope. */
  outbox(): Promise<{ count: number; oldest_at: Date | null } | null>;
  /**
   * `rlc_fleet_query_errors_total`, registered on no registry: its owner registers it after the
   * gauges that read, since its collect waits for their loads (the count is then that scrape's).
   */
  errors: Counter<"query">;
}

export interface FleetReadOptions {
  sql: Sql;
  clock: Clock;
  /** Told when a query fails; the scrape then goes on without that figure. */
  onError?: (query: string, err: unknown) => void;
  cacheMs?: number;
  timeoutMs?: number;
}

/** Speakers grouped by the inputs of their sync status, as totals per tenant and status. */
function speakerTotals(rows: SpeakerSyncGroupRow[]): Map<string, Record<SyncStatus, number>> {
  const totals = new Map<string, Record<SyncStatus, number>>();
  for (const r of rows) {
    // A stand-in row with the group's shape: the one rule the API applies decides here too.
    const status = syncStatusOf({
      last_report_at: r.reported ? new Date(0) : null,
      dispatch_status: r.dispatch_failed ? "failed" : "idle",
      last_error: r.has_error ? {} : null,
      desired_revision_id: r.has_desired ? 1 : null,
      applied_revision_id: r.applied_is_desired ? (r.has_desired ? 1 : null) : r.has_desired ? 0 : 1,
    });
    let counts = totals.get(r.tenant_id);
    if (!counts) totals.set(r.tenant_id, (counts = { in_sync: 0, out_of_sync: 0, unknown: 0, error: 0 }));
    counts[status] += r.count;
  }
  return totals;
}

/**
 * The shared state's figures, read from PostgreSQL when Prometheus scrapes. One query's answer
 * serves every scrape of its scope within the cache window: the public `/metrics` and the
 * deployment's superadmins read all tenants (one answer for both), a tenant's key reads its own.
 * A query that fails or does not answer in time answers null for that scrape and counts in
 * `errors`.
 */
export function createFleetReads(o: FleetReadOptions): FleetReads {
  const ttl = o.cacheMs ?? FLEET_CACHE_MS;
  const timeoutMs = o.timeoutMs ?? FLEET_QUERY_TIMEOUT_MS;
  // Loads under way: the error count waits for them, so it is this scrape's.
  const inflight = new Set<Promise<unknown>>();
  const errors = new Counter({
    name: "rlc_fleet_query_errors_total",
    help: "Scrape-time queries of the shared state that failed, by query (the figure is missing from that scrape).",
    labelNames: ["query"] as const,
    registers: [],
    async collect() {
      await Promise.allSettled([...inflight]);
    },
  });
  const read = <K, T>(query: string, load: (key: K) => Promise<T>) => {
    const get = cachedBy(ttl, async (key: K) => {
      try {
        return await within(timeoutMs, query, load(key));
      } catch (err) {
        errors.inc({ query });
        o.onError?.(query, err);
        throw err;
      }
    });
    return async (key: K): Promise<T | null> => {
      const p = get(key);
      inflight.add(p);
      try {
        return await p;
      } catch {
        return null;
      } finally {
        inflight.delete(p);
      }
    };
  };
  const outbox = read("audit_outbox", () => findAuditOutboxBacklog(o.sql));
  return {
    jobs: read("jobs", (scope: TenantScope) => countActiveJobs(o.sql, new Date(o.clock.now()), scope)),
    speakers: read("speakers", async (scope: TenantScope) => speakerTotals(await countSpeakersBySyncInputs(o.sql, scope))),
    reports: read("speaker_reports", (scope: TenantScope) => listSpeakerReportTimes(o.sql, scope, FLEET_SERIES_LIMIT)),
    revisions: read("revisions", (scope: TenantScope) => listLatestRevisions(o.sql, scope)),
    failingModules: read("modules", (scope: TenantScope) => countModulesWithRefreshErrors(o.sql, scope)),
    tenants: read("tenants", (scope: TenantScope) => listTenantNames(o.sql, scope, FLEET_SERIES_LIMIT)),
    outbox: () => outbox(null),
    errors,
  };
}

/** Seconds from `since` to `now` (ms), never below 0: the rows' times come from other processes' clocks. */
export const ageSeconds = (since: Date, now: number) => Math.max(0, (now - since.getTime()) / 1000);
