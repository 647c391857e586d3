import type { Clock } from "@rlc/shared/time";
import { Counter, Gauge, Registry } from "prom-client";
import { ageSeconds, type FleetReads, SYNC_STATUSES, type TenantScope } from "./fleet-reads.js";

export interface TenantMetrics {
  contentType: string;
  /** The fleet detail of one tenant (or of all of them, null) in the Prometheus text format. */
  render(scope: TenantScope): Promise<string>;
  /** Sources of a tenant's refresh that this process could not collect, by kind. */
  sourceFailed(tenantId: string, kind: string): void;
  /** Sources of a tenant's refresh whose kept records were dropped as stale, by kind. */
  sourceStale(tenantId: string, kind: string): void;
}

/**
 * The fleet detail behind `GET /v1/metrics`: every figure labelled with a tenant or a speaker,
 * which the public `/metrics` leaves out (a tenant's ids and names are not everybody's).
 * Each scrape gets a registry of its own, filled with its scope's rows only, so one tenant's
 * series can never be in another tenant's answer. Label `tenant` is the tenant's id;
 * `rlc_tenant_info` gives its name.
 */
export function createTenantMetrics(o: { reads: FleetReads; clock: Clock }): TenantMetrics {
  const { reads } = o;
  // This process's count of failed sources by tenant and kind (asn, domain, cdn, other): a
  // handful of series per tenant that ever had a failure.
  const sourceFailures = new Map<string, Map<string, number>>();
  const sourcesStale = new Map<string, Map<string, number>>();
  const count = (counts: Map<string, Map<string, number>>, tenantId: string, kind: string) => {
    let byKind = counts.get(tenantId);
    if (!byKind) counts.set(tenantId, (byKind = new Map()));
    byKind.set(kind, (byKind.get(kind) ?? 0) + 1);
  };

  return {
    contentType: Registry.PROMETHEUS_CONTENT_TYPE,
    sourceFailed: (tenantId, kind) => count(sourceFailures, tenantId, kind),
    sourceStale: (tenantId, kind) => count(sourcesStale, tenantId, kind),
    async render(scope) {
      const [jobs, speakers, reports, revisions, failing, tenants] = await Promise.all([
        reads.jobs(scope),
        reads.speakers(scope),
        reads.reports(scope),
        reads.revisions(scope),
        reads.failingModules(scope),
        reads.tenants(scope),
      ]);
      const now = o.clock.now();
      const registry = new Registry();
      const registers = [registry];
      const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Gauge({ name, help, labelNames, registers });

      const jobCounts = gauge("rlc_jobs", "Jobs not yet ended, by tenant, type and status (queued, running, awaiting agents).", ["tenant", "type", "status"]);
      const oldestQueued = gauge(
        "rlc_jobs_oldest_queued_age_seconds",
        "How long the oldest due queued job has waited for a worker, by tenant and type (absent: none waits).",
        ["tenant", "type"],
      );
      for (const r of jobs ?? []) {
        jobCounts.set({ tenant: r.tenant_id, type: r.type, status: r.status }, r.count);
        if (r.oldest_due_at) oldestQueued.set({ tenant: r.tenant_id, type: r.type }, ageSeconds(r.oldest_due_at, now));
      }

      const speakerCounts = gauge("rlc_speakers", "Speakers by tenant and sync_status (in_sync, out_of_sync, unknown, error), as the API reports it.", [
        "tenant",
        "sync_status",
      ]);
      for (const [tenant, counts] of speakers ?? []) for (const s of SYNC_STATUSES) speakerCounts.set({ tenant, sync_status: s }, counts[s]);

      const reportAge = gauge(
        "rlc_speaker_last_report_age_seconds",
        "Seconds since each enrolled agent's last status report; an agent that never reported counts from +Inf.",
        ["tenant", "speaker", "speaker_id"],
      );
      for (const r of reports ?? []) {
        reportAge.set(
          { tenant: r.tenant_id, speaker: r.name, speaker_id: r.speaker_id },
          r.last_report_at ? ageSeconds(r.last_report_at, now) : Number.POSITIVE_INFINITY,
        );
      }

      const prefixes = gauge("rlc_revision_prefixes", "Prefixes in each tenant's newest revision, by ip_version (4, 6).", ["tenant", "ip_version"]);
      const latest = gauge("rlc_revision_latest", "Number of each tenant's newest revision.", ["tenant"]);
      for (const r of revisions ?? []) {
        prefixes.set({ tenant: r.tenant_id, ip_version: "4" }, r.prefix_count_v4);
        prefixes.set({ tenant: r.tenant_id, ip_version: "6" }, r.prefix_count_v6);
        latest.set({ tenant: r.tenant_id }, r.revision_id);
      }

      const failingModules = gauge(
        "rlc_modules_refresh_failing",
        "Enabled modules whose last refresh had failed sources (they keep those sources' previous prefixes), by tenant.",
        ["tenant"],
      );
      for (const r of failing ?? []) failingModules.set({ tenant: r.tenant_id }, r.count);

      // This process's counts, by tenant and kind: only the scope's tenants.
      const counter = (name: string, help: string, counts: Map<string, Map<string, number>>) => {
        const c = new Counter({ name, help, labelNames: ["tenant", "kind"] as const, registers });
        for (const [tenant, byKind] of counts) if (scope === null || tenant === scope) for (const [kind, n] of byKind) c.inc({ tenant, kind }, n);
      };
      counter(
        "rlc_ingest_source_failures_total",
        "Sources a refresh run by this process could not collect (the module keeps their previous prefixes), by tenant and kind (asn, domain, cdn).",
        sourceFailures,
      );
      counter(
        "rlc_ingest_sources_stale_total",
        "Sources of a refresh run by this process whose kept records outlived the module's max_stale_hours and were dropped, by tenant and kind (asn, domain, cdn, country).",
        sourcesStale,
      );

      const info = gauge("rlc_tenant_info", "Always 1: maps the `tenant` label (the tenant's id) to its name.", ["tenant", "name"]);
      for (const r of tenants ?? []) info.set({ tenant: r.id, name: r.name }, 1);

      return registry.metrics();
    },
  };
}
