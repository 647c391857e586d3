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
  // A gauge filled by `collect` at each scrape (prom-client calls it with the gauge).
  const gauge = <L extends string>(name: string, help: string, labelNames: readonly L[], collect: (g: Gauge<L>) => Promise<void>) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers,
      async collect() {
        await collect(this);
      },
    });

  gauge(
    "rlc_deployment_jobs",
    "Jobs not yet ended in all tenants together, by type and status (queued, running, awaiting agents).",
    ["type", "status"],
    async (g) => {
      const rows = await reads.jobs(null);
      g.reset();
      const totals = new Map<string, { type: string; status: string; count: number }>();
      for (const r of rows ?? []) {
        const key = `${r.type}\n${r.status}`;
        const t = totals.get(key) ?? { type: r.type, status: r.status, count: 0 };
        t.count += r.count;
        totals.set(key, t);
      }
      for (const t of totals.values()) g.set({ type: t.type, status: t.status }, t.count);
    },
  );
  gauge(
    "rlc_deployment_jobs_oldest_queued_age_seconds",
    "How long the oldest due queued job of any tenant has waited for a worker, by type (absent: none waits).",
    ["type"],
    async (g) => {
      const rows = await reads.jobs(null);
      g.reset();
      const now = o.clock.now();
      const oldest = new Map<string, number>();
      for (const r of rows ?? []) {
        if (!r.oldest_due_at) continue;
        oldest.set(r.type, Math.max(oldest.get(r.type) ?? 0, ageSeconds(r.oldest_due_at, now)));
      }
      for (const [type, age] of oldest) g.set({ type }, age);
    },
  );
  gauge(
    "rlc_deployment_speakers",
    "Speakers of all tenants together by sync_status (in_sync, out_of_sync, unknown, error), as the API reports it.",
    ["sync_status"],
    async (g) => {
      const totals = await reads.speakers(null);
      g.reset();
      if (!totals) return;
      for (const s of SYNC_STATUSES) {
        let n = 0;
        for (const counts of totals.values()) n += counts[s];
        g.set({ sync_status: s }, n);
      }
    },
  );
  gauge(
    "rlc_deployment_modules_refresh_failing",
    "Enabled modules of all tenants together whose last refresh had failed sources (they keep those sources' previous prefixes).",
    [],
    async (g) => {
      const rows = await reads.failingModules(null);
      g.set(rows ? rows.reduce((n, r) => n + r.count, 0) : Number.NaN);
    },
  );

  gauge("rlc_audit_outbox_records", "Audit records waiting in the outbox to be pushed to the auth portal.", [], async (g) => {
    // No labels, so no way to leave the series out: NaN says "unknown" (a 0 would say "empty").
    g.set((await reads.outbox())?.count ?? Number.NaN);
  });
  gauge("rlc_audit_outbox_oldest_age_seconds", "Age of the oldest audit record waiting in the outbox (0 when it is empty).", [], async (g) => {
    const row = await reads.outbox();
    g.set(row ? (row.oldest_at ? ageSeconds(row.oldest_at, o.clock.now()) : 0) : Number.NaN);
  });
  // Last: prom-client collects in order of registration, and this one waits for the others' loads.
  o.registry.registerMetric(reads.errors);
}
