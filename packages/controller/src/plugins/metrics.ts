import { Problem } from "@rlc/shared/schemas";
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { Counter, type Registry } from "prom-client";
import { z } from "zod";
import { type DurationSeries, RequestDurations, type RequestLabels } from "./request-durations.js";

/**
 * `/metrics` on the controller's public registry (metrics/controller-metrics.ts: process, jobs,
 * deployment-wide totals), plus request counts and latency by route pattern and status. With
 * `serve: false` (METRICS_PORT set) the requests are still counted, and `/metrics` is answered
 * by its own listener (metrics-listener.ts) instead of this app.
 */
export default fp(async function metricsPlugin(app: FastifyInstance, opts: { registry: Registry; serve?: boolean }) {
  const registry = opts.registry;
  // The count is the histogram's: read from it at scrape time rather than kept twice on every
  // request.
  new Counter({
    name: "rlc_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status code.",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
    async collect() {
      const { values } = await duration.get();
      // Reset and refill in one synchronous step, so scrapes that overlap never add up.
      this.reset();
      for (const v of values) if (v.metricName === "rlc_http_request_duration_seconds_count") this.inc(v.labels as RequestLabels, v.value);
    },
  });
  const duration = new RequestDurations([0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]);
  duration.register(registry);
  app.decorate("metrics", registry);

  // One series per route, method and status, made once (as many as the series themselves) and
  // found through the route's own config object: no key is built per request.
  const seriesByRoute = new WeakMap<object, Map<string, Map<number, DurationSeries>>>();
  const NO_ROUTE: { url?: string } = {};
  app.addHook("onResponse", (req, reply, done) => {
    const config = req.routeOptions.config ?? NO_ROUTE;
    let byMethod = seriesByRoute.get(config);
    if (!byMethod) seriesByRoute.set(config, (byMethod = new Map()));
    let byStatus = byMethod.get(req.method);
    if (!byStatus) byMethod.set(req.method, (byStatus = new Map()));
    let series = byStatus.get(reply.statusCode);
    if (!series) {
      // The route pattern, never the raw URL: ids in paths would explode the label set.
      const route = req.is404 ? "unmatched" : (config.url ?? "unmatched");
      series = duration.series({ method: req.method, route, status: String(reply.statusCode) });
      byStatus.set(reply.statusCode, series);
    }
    duration.observe(series, reply.elapsedTime / 1000);
    done();
  });

  if (opts.serve !== false) metricsRoute(app, registry);
});

/** `GET /metrics`, public: the registry in the text format. */
export function metricsRoute(app: FastifyInstance, registry: Registry): void {
  app.get(
    "/metrics",
    {
      schema: {
        tags: ["metrics"],
        summary: "Prometheus metrics of this process and the deployment's totals",
        description:
          "Prometheus text exposition format, no authentication: HTTP requests (`rlc_http_requests_total`, `rlc_http_request_duration_seconds`), " +
          "this process's job runs, applies and failed sources, the deployment's totals over all tenants (`rlc_deployment_*`: jobs, speakers by sync status, " +
          "failing modules; read from the database at scrape time, cached 2 s), the audit outbox, scheduler role, bus state, " +
          "and the standard process metrics (`process_*`, `nodejs_*`). No series names or labels a tenant or a speaker: the per-tenant detail is " +
          "`GET /v1/metrics`, with a key. docs/metrics.md in the repository lists them all. With `METRICS_PORT` set it is served on that listener only.",
        security: [],
        response: {
          200: { description: "The metrics", content: { "text/plain": { schema: z.string() } } },
          // On the API's listener (plugins/strict-requests.ts): the scrape takes no parameter.
          400: { description: "A query parameter (`validation_failed`)", content: { "application/problem+json": { schema: Problem } } },
        },
      },
      config: { auth: "public" },
    },
    async (_req, reply) => {
      reply.type(registry.contentType);
      return reply.serializer(String).send(await registry.metrics());
    },
  );
}

declare module "fastify" {
  interface FastifyInstance {
    metrics: Registry;
  }
}
