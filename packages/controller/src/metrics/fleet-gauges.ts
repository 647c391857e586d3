import type { Clock } from "@rlc/shared/time";
import { Counter, Gauge, type Registry } from "prom-client";
import type { Sql } from "../db/connect.js";
import {
  countActiveJobs,
  countModulesWithRefreshErrors,
  countSpeakersBySyncInputs,
  findAuditOutboxBacklog,
  listLatestRevisions,
  listSpeakerReportTimes,
  listTenantNames,
} from "../db/fleet-metrics.js";
import { syncStatusOf } from "../services/deploy/speakers.js";

/** How long one answer of a query serves scrapes: a scrape storm costs one query per figure per window. */
export const FLEET_CACHE_MS = 2000;
/** A query slower than this is given up for the scrape (Prometheus's default scrape timeout is 10 s). */
export const FLEET_QUERY_TIMEOUT_MS = 5000;
/** At most this many speakers (and tenants) get a series of their own; the fleet's size stays bounded on a scrape. */
export const FLEET_SERIES_LIMIT = 10_000;

const SYNC_STATUSES = ["in_sync", "out_of_sync", "unknown", "error"] as const;

/** One series of a gauge: its labels and its value. */
type Series<L extends string> = [labels: Record<L, string>, value: number];

/** Seconds from `since` to `now` (ms), never below 0: the rows' times come from other processes' clocks. */
const ageSeconds = (since: Date, now: number) => Math.max(0, (now - since.getTime()) / 1000);

/**
 * One query's answer, shared by the scrapes within `ttlMs` and by concurrent ones (a second
 * scrape during the query waits for the same promise). Monotonic time: the controller's clock
 * may be a test's hand-moved one.
 */
function cached<T>(ttlMs: number, load: () => Promise<T>): () => Promise<T> {
  let entry: { at: number; value: Promise<T> } | null = null;
  return () => {
    const now = performance.now();
    if (!entry || now - entry.at >= ttlMs) {
      const value = load();
      entry = { at: now, value };
      // A failed query is not kept: the next scrape tries again.
      value.catch(() => {
        if (entry?.value === value) entry = null;
      });
    }
    return entry.value;
  };
}

export interface FleetGaugeOptions {
  registry: Registry;
  sql: Sql;
  clock: Clock;
  /** Told when a query fails; the scrape then goes on without that figure. */
  onError?: (query: string, err: unknown) => void;
  cacheMs?: number;
  timeoutMs?: number;
}

/** The query's answer, or a rejection once `ms` have passed (the query itself runs on). */
function within<T>(ms: number, query: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the ${query} query took longer than ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/**
 * Gauges of the shared state, read from PostgreSQL when Prometheus scrapes (prom-client's
 * `collect()`), each from one cached query. A query that fails leaves its gauge empty for that
 * scrape (NaN for the outbox's two, which have no labels) and counts in
 * `rlc_fleet_query_errors_total`; `/metrics` still answers.
 */
export function registerFleetGauges(o: FleetGaugeOptions): void {
  const ttl = o.cacheMs ?? FLEET_CACHE_MS;
  const timeoutMs = o.timeoutMs ?? FLEET_QUERY_TIMEOUT_MS;
  const registers = [o.registry];
  // Loads under way in this scrape: the error count waits for them, so it is this scrape's.
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
  const read = <T>(query: string, load: () => Promise<T>) => {
    const get = cached(ttl, async () => {
      try {
        return await within(timeoutMs, query, load());
      } catch (err) {
        errors.inc({ query });
        o.onError?.(query, err);
        throw err;
      }
    });
    return async (): Promise<T | null> => {
      const p = get();
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

  /**
   * A gauge set on each scrape from the rows of one cached query, each row giving its series.
   * The old series are dropped first, so a tenant or speaker that went away leaves none.
   */
  const rowGauge = <R, L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    rows: () => Promise<readonly R[] | null>,
    series: (row: R, now: number) => Series<L>[],
  ) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        const list = await rows();
        this.reset();
        const now = o.clock.now();
        for (const row of list ?? []) for (const [labels, value] of series(row, now)) this.set(labels, value);
      },
    });

  const jobs = read("jobs", () => countActiveJobs(o.sql, new Date(o.clock.now())));
  rowGauge("rlc_jobs", "Jobs not yet ended, by tenant, type and status (queued, running, awaiting agents).", ["tenant", "type", "status"], jobs, (r) => [
    [{ tenant: r.tenant_id, type: r.type, status: r.status }, r.count],
  ]);
  rowGauge(
    "rlc_jobs_oldest_queued_age_seconds",
    "How long the oldest due queued job has waited for a worker, by tenant and type (absent: none waits).",
    ["tenant", "type"],
    jobs,
    (r, now) => (r.oldest_due_at ? [[{ tenant: r.tenant_id, type: r.type }, ageSeconds(r.oldest_due_at, now)]] : []),
  );

  const speakers = read("speakers", () => countSpeakersBySyncInputs(o.sql));
  new Gauge({
    name: "rlc_speakers",
    help: "Speakers by tenant and sync_status (in_sync, out_of_sync, unknown, error), as the API reports it.",
    labelNames: ["tenant", "sync_status"] as const,
    registers,
    async collect() {
      const rows = await speakers();
      this.reset();
      if (!rows) return;
      const totals = new Map<string, number>();
      for (const r of rows) {
        // A stand-in row with the group's shape: the one rule the API applies decides here too.
        const status = syncStatusOf({
          last_report_at: r.reported ? new Date(0) : null,
          dispatch_status: r.dispatch_failed ? "failed" : "idle",
          last_error: r.has_error ? {} : null,
          desired_revision_id: r.has_desired ? 1 : null,
          applied_revision_id: r.applied_is_desired ? (r.has_desired ? 1 : null) : r.has_desired ? 0 : 1,
        });
        const key = `${r.tenant_id}\n${status}`;
        totals.set(key, (totals.get(key) ?? 0) + r.count);
      }
      const tenants = new Set(rows.map((r) => r.tenant_id));
      for (const tenant of tenants) {
        for (const s of SYNC_STATUSES) this.set({ tenant, sync_status: s }, totals.get(`${tenant}\n${s}`) ?? 0);
      }
    },
  });

  const reports = read("speaker_reports", () => listSpeakerReportTimes(o.sql, FLEET_SERIES_LIMIT));
  rowGauge(
    "rlc_speaker_last_report_age_seconds",
    "Seconds since each enrolled agent's last status report; an agent that never reported counts from +Inf.",
    ["tenant", "speaker", "speaker_id"],
    reports,
    (r, now) => [
      [{ tenant: r.tenant_id, speaker: r.name, speaker_id: r.speaker_id }, r.last_report_at ? ageSeconds(r.last_report_at, now) : Number.POSITIVE_INFINITY],
    ],
  );

  const revisions = read("revisions", () => listLatestRevisions(o.sql));
  rowGauge("rlc_revision_prefixes", "Prefixes in each tenant's newest revision, by ip_version (4, 6).", ["tenant", "ip_version"], revisions, (r) => [
    [{ tenant: r.tenant_id, ip_version: "4" }, r.prefix_count_v4],
    [{ tenant: r.tenant_id, ip_version: "6" }, r.prefix_count_v6],
  ]);
  rowGauge("rlc_revision_latest", "Number of each tenant's newest revision.", ["tenant"], revisions, (r) => [[{ tenant: r.tenant_id }, r.revision_id]]);

  const failingModules = read("modules", () => countModulesWithRefreshErrors(o.sql));
  rowGauge(
    "rlc_modules_refresh_failing",
    "Enabled modules whose last refresh had failed sources (they keep those sources' previous prefixes), by tenant.",
    ["tenant"],
    failingModules,
    (r) => [[{ tenant: r.tenant_id }, r.count]],
  );

  const outbox = read("audit_outbox", () => findAuditOutboxBacklog(o.sql));
  new Gauge({
    name: "rlc_audit_outbox_records",
    help: "Audit records waiting in the outbox to be pushed to the auth portal.",
    registers,
    async collect() {
      // No labels, so no way to leave the series out: NaN says "unknown" (a 0 would say "empty").
      this.set((await outbox())?.count ?? Number.NaN);
    },
  });
  new Gauge({
    name: "rlc_audit_outbox_oldest_age_seconds",
    help: "Age of the oldest audit record waiting in the outbox (0 when it is empty).",
    registers,
    async collect() {
      const row = await outbox();
      this.set(row ? (row.oldest_at ? ageSeconds(row.oldest_at, o.clock.now()) : 0) : Number.NaN);
    },
  });

  const tenants = read("tenants", () => listTenantNames(o.sql, FLEET_SERIES_LIMIT));
  rowGauge("rlc_tenant_info", "Always 1: maps the `tenant` label (the tenant's id) to its name.", ["tenant", "name"], tenants, (r) => [
    [{ tenant: r.id, name: r.name }, 1],
  ]);
  // Last: prom-client collects in order of registration, and this one waits for the others' loads.
  o.registry.registerMetric(errors);
}
