import type { Clock } from "@rlc/shared/time";
import { Gauge, type Registry } from "prom-client";
import { ageSeconds, type FleetReads, SYNC_STATUSES } from "./fleet-reads.js";

/**
 * The public `/metrics`' view of the shared state: deployment-wide totals, summed (or the
 * maximum taken) over every tenant, so nothing in them names a tenant or a speaker. The
 * per-tenant detail is `GET /v1/metrics`' (tenant-metrics.ts). Read when Prometheus scrapes
 * (prom-client's `collect()`); a query that fails leaves its figure out of that scrape (NaN for
 * those without labels, which have no way to be left out) and counts in
 * `rlc_fleet_query_errors_total`.
 */
export function registerDeploymentGauges(o: { registry: Registry; reads: FleetReads; clock: Clock }): void {
  const registers = [o.registry];
  const { reads } = o;

  new Gauge({
    name: "rlc_deployment_jobs",
    help: "Jobs not yet ended in all tenants together, by type and status (queued, running, awaiting agents).",
    labelNames: ["type", "status"] as const,
    registers,
    async collect() {
      const rows = await reads.jobs(null);
      this.reset();
      const totals = new Map<string, { type: string; status: string; count: number }>();
      for (const r of rows ?? []) {
        const key = `${r.type}\n${r.status}`;
        const t = totals.get(key) ?? { type: r.type, status: r.status, count: 0 };
        t.count += r.count;
        totals.set(key, t);
      }
      for (const t of totals.values()) this.set({ type: t.type, status: t.status }, t.count);
    },
  });
  new Gauge({
    name: "rlc_deployment_jobs_oldest_queued_age_seconds",
    help: "How long the oldest due queued job of any tenant has waited for a worker, by type (absent: none waits).",
    labelNames: ["type"] as const,
    registers,
    async collect() {
      const rows = await reads.jobs(null);
      this.reset();
      const now = o.clock.now();
      const oldest = new Map<string, number>();
      for (const r of rows ?? []) {
        if (!r.oldest_due_at) continue;
        oldest.set(r.type, Math.max(oldest.get(r.type) ?? 0, ageSeconds(r.oldest_due_at, now)));
      }
      for (const [type, age] of oldest) this.set({ type }, age);
    },
  });
  new Gauge({
    name: "rlc_deployment_speakers",
    help: "Speakers of all tenants together by sync_status (in_sync, out_of_sync, unknown, error), as the API reports it.",
    labelNames: ["sync_status"] as const,
    registers,
    async collect() {
      const totals = await reads.speakers(null);
      this.reset();
      if (!totals) return;
      for (const s of SYNC_STATUSES) {
        let n = 0;
        for (const counts of totals.values()) n += counts[s];
        this.set({ sync_status: s }, n);
      }
    },
  });
  new Gauge({
    name: "rlc_deployment_modules_refresh_failing",
    help: "Enabled modules of all tenants together whose last refresh had failed sources (they keep those sources' previous prefixes).",
    registers,
    async collect() {
      const rows = await reads.failingModules(null);
      this.set(rows ? rows.reduce((n, r) => n + r.count, 0) : Number.NaN);
    },
  });

  new Gauge({
    name: "rlc_audit_outbox_records",
    help: "Audit records waiting in the outbox to be pushed to the auth portal.",
    registers,
    async collect() {
      // No labels, so no way to leave the series out: NaN says "unknown" (a 0 would say "empty").
      this.set((await reads.outbox())?.count ?? Number.NaN);
    },
  });
  new Gauge({
    name: "rlc_audit_outbox_oldest_age_seconds",
    help: "Age of the oldest audit record waiting in the outbox (0 when it is empty).",
    registers,
    async collect() {
      const row = await reads.outbox();
      this.set(row ? (row.oldest_at ? ageSeconds(row.oldest_at, o.clock.now()) : 0) : Number.NaN);
    },
  });
  // Last: prom-client collects in order of registration, and this one waits for the others' loads.
  o.registry.registerMetric(reads.errors);
}
