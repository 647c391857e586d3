import type { Clock } from "@rlc/shared/time";
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { Bus } from "../bus/index.js";
import type { Sql } from "../db/connect.js";
import { registerDeploymentGauges } from "./deployment-gauges.js";
import { createFleetReads } from "./fleet-reads.js";
import { createTenantMetrics, type TenantMetrics } from "./tenant-metrics.js";

/** What the job worker, the poisoned-job sweep and the apply evaluation tell the metrics. */
export interface JobMetrics {
  /**
   * A worker's run of one job attempt ended: `succeeded`, `failed`, `cancelled`, `retried`,
   * `awaiting` (an apply handed over to the agents) or `lost` (another worker has it now).
   */
  ran(type: string, outcome: string, seconds: number): void;
  /** A job ended `failed`, with its problem code. */
  failed(type: string, code: string): void;
  /** An apply ended (every speaker answered, or its deadline came), `seconds` after its worker started it. */
  applyEnded(status: "succeeded" | "failed", seconds: number): void;
  /** Sources of a refresh that failed (`asn:64500`, `domain:example.com`, `cdn:<id>`): counted by kind. */
  sourcesFailed(tenantId: string, sources: string[]): void;
  /** Sources whose kept records outlived the module's `max_stale_hours` and were dropped (`cdn:<id>`…): counted by kind. */
  sourcesStale(tenantId: string, sources: string[]): void;
  /** A bundle transfer began, in this format (`rl-bundle/1` to agents of the release before). */
  bundleServed?(format: string): void;
}

export interface ControllerMetrics {
  /** The public `/metrics`: this process, HTTP, and deployment-wide totals that name no tenant. */
  registry: Registry;
  /** `GET /v1/metrics`: the per-tenant and per-speaker detail, one tenant (or all) per scrape. */
  fleet: TenantMetrics;
  jobs: JobMetrics;
  /** Exposes this process's scheduler role (only processes that run a scheduler call it). */
  watchScheduler(scheduler: { isLeader(): boolean }): void;
  /** Exposes the agents' Watch streams this process holds (only processes that serve gRPC call it). */
  watchAgentStreams(service: { openWatches(): number }): void;
  /** An error that escaped every promise (a database driver's timer) and that the process survived. */
  survivedUncaught(source: "database_driver"): void;
}

const RUN_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];
const APPLY_BUCKETS = [1, 2.5, 5, 10, 15, 20, 30, 45, 60, 120, 300, 600, 1800];

/** A failed source's kind, the part before the colon: never the ASN, domain or feed id (unbounded). */
const sourceKind = (source: string) => {
  const kind = source.slice(0, source.indexOf(":"));
  return kind === "asn" || kind === "domain" || kind === "cdn" || kind === "country" ? kind : "other";
};

/**
 * The controller's metrics, one registry per controller (tests run many in one process).
 * Node's and the process's default metrics keep their standard names (`process_*`,
 * `nodejs_*`), so stock dashboards find them; the controller's own start with `rlc_`.
 * Shared state is read from PostgreSQL at scrape time (fleet-reads.ts): its deployment-wide
 * totals go on the public registry (deployment-gauges.ts), the per-tenant detail to
 * `/v1/metrics` (tenant-metrics.ts). What only this process sees (its job runs, its scheduler
 * role, its bus connection) is counted here.
 */
export function createControllerMetrics(o: { sql: Sql; clock: Clock; bus: Bus; onQueryError?: (query: string, err: unknown) => void }): ControllerMetrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });
  // prom-client names these gauges *_total, which `promtool check metrics` rejects (a _total
  // suffix promises a counter); the same counts are in nodejs_active_*_total's siblings
  // (event loop lag, heap) that stay.
  for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) registry.removeSingleMetric(name);

  const reads = createFleetReads({ sql: o.sql, clock: o.clock, ...(o.onQueryError ? { onError: o.onQueryError } : {}) });
  registerDeploymentGauges({ registry, reads, clock: o.clock });
  const fleet = createTenantMetrics({ reads, clock: o.clock });

  // The job and ingest figures this process counts: name, help, labels (and buckets).
  const histogram = <L extends string>(name: string, help: string, labelNames: readonly L[], buckets: number[]) =>
    new Histogram({ name, help, labelNames, buckets, registers });
  const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) => new Counter({ name, help, labelNames, registers });
  const runs = histogram(
    "rlc_job_run_duration_seconds",
    "Time a worker of this process spent on one job attempt, by type and outcome (succeeded, failed, cancelled, retried, awaiting, lost).",
    ["type", "outcome"],
    RUN_BUCKETS,
  );
  const failures = counter(
    "rlc_job_failures_total",
    "Jobs this process ended failed, by type and problem code (revision_guard_tripped, apply_failed, internal, …).",
    ["type", "code"],
  );
  const applies = histogram(
    "rlc_apply_duration_seconds",
    "From an apply's start to its end (every speaker applied or failed, or the deadline), for the applies this process ended, by status.",
    ["status"],
    APPLY_BUCKETS,
  );
  // By kind alone here; by tenant too in the fleet detail.
  const sources = counter(
    "rlc_deployment_ingest_source_failures_total",
    "Sources of any tenant's refresh that this process could not collect (the module keeps their previous prefixes), by kind (asn, domain, cdn).",
    ["kind"],
  );
  const staleSources = counter(
    "rlc_deployment_ingest_sources_stale_total",
    "Sources of any tenant's refresh whose kept records outlived the module's max_stale_hours and were dropped, by kind (asn, domain, cdn, country).",
    ["kind"],
  );

  new Gauge({
    name: "rlc_bus_connected",
    help: "1 while this process's bus can deliver (NATS connected, or the in-process bus), 0 while NATS is unreachable.",
    labelNames: ["kind"] as const,
    registers,
    collect() {
      this.reset();
      this.set({ kind: o.bus.kind }, o.bus.health() === "down" ? 0 : 1);
    },
  });

  const survived = counter(
    "rlc_uncaught_errors_survived_total",
    "Errors that escaped every promise of this process (a database driver's timer after its connection closed) and were logged while the process kept running.",
    ["source"],
  );
  survived.inc({ source: "database_driver" }, 0);

  const bundlesServed = counter(
    "rlc_bundles_served_total",
    "Bundle transfers this process began, by format: rl-bundle/1 goes to agents that announced nothing (older than the controller; GET /v1/speakers warns of them).",
    ["format"],
  );
  for (const format of ["rl-bundle/2", "rl-bundle/1"]) bundlesServed.inc({ format }, 0);

  return {
    registry,
    fleet,
    survivedUncaught: (source) => survived.inc({ source }),
    watchScheduler(scheduler) {
      // Registered only here: a process without a scheduler shows no series rather than a 0.
      new Gauge({
        name: "rlc_scheduler_leader",
        help: "1 while this process leads the periodic tasks, 0 while it follows; absent in processes that run no scheduler.",
        registers,
        collect() {
          this.set(scheduler.isLeader() ? 1 : 0);
        },
      });
    },
    watchAgentStreams(service) {
      // Per process, as the scheduler role: which replica the agents are connected to.
      new Gauge({
        name: "rlc_grpc_watch_streams",
        help: "Agents' Watch streams open on this process's gRPC listener; absent in processes that serve no gRPC.",
        registers,
        collect() {
          this.set(service.openWatches());
        },
      });
    },
    jobs: {
      ran: (type, outcome, seconds) => runs.observe({ type, outcome }, seconds),
      failed: (type, code) => failures.inc({ type, code }),
      applyEnded: (status, seconds) => applies.observe({ status }, seconds),
      bundleServed: (format) => bundlesServed.inc({ format }),
      sourcesFailed(tenantId, failed) {
        for (const s of failed) {
          const kind = sourceKind(s);
          sources.inc({ kind });
          fleet.sourceFailed(tenantId, kind);
        }
      },
      sourcesStale(tenantId, stale) {
        for (const s of stale) {
          const kind = sourceKind(s);
          staleSources.inc({ kind });
          fleet.sourceStale(tenantId, kind);
        }
      },
    },
  };
}
