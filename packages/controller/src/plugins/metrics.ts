import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { Counter, Histogram, type Registry } from "prom-client";
import { z } from "zod";

/**
 * `/metrics` on the controller's registry (metrics/controller-metrics.ts: process, jobs, fleet
 * state), plus request counts and latency by route pattern and status.
 */
type Labels = { method: string; route: string; status: string };

export default fp(async function metricsPlugin(app: FastifyInstance, opts: { registry: Registry }) {
  const registry = opts.registry;
  // The count is the histogram's: read from it at scrape time rather than kept twice on every
  // request (each prom-client update builds and checks its label key).
  new Counter({
    name: "rlc_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status code.",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
    async collect() {
      const { values } = await duration.get();
      // Reset and refill in one synchronous step, so scrapes that overlap never add up.
      this.reset();
      for (const v of values) if (v.metricName === "rlc_http_request_duration_seconds_count") this.inc(v.labels as Labels, v.value);
    },
  });
  const duration = new Histogram({
    name: "rlc_http_request_duration_seconds",
    help: "HTTP request latency in seconds, by method, route pattern and status code.",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  app.decorate("metrics", registry);

  // One label set per route, method and status, made once (as many as the series themselves) and
  // found through the route's own config object: no key is built per request.
  const labelSets = new WeakMap<object, Map<string, Map<number, Labels>>>();
  const NO_ROUTE: { url?: string } = {};
  app.addHook("onResponse", (req, reply, done) => {
    const config = req.routeOptions.config ?? NO_ROUTE;
    let byMethod = labelSets.get(config);
    if (!byMethod) labelSets.set(config, (byMethod = new Map()));
    let byStatus = byMethod.get(req.method);
    if (!byStatus) byMethod.set(req.method, (byStatus = new Map()));
    let labels = byStatus.get(reply.statusCode);
    if (!labels) {
      // The route pattern, never the raw URL: ids in paths would explode the label set.
      const route = req.is404 ? "unmatched" : (config.url ?? "unmatched");
      labels = { method: req.method, route, status: String(reply.statusCode) };
      byStatus.set(reply.statusCode, labels);
    }
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  app.get(
    "/metrics",
    {
      schema: {
        tags: ["metrics"],
        summary: "Prometheus metrics",
        description:
          "Prometheus text exposition format, no authentication: HTTP requests (`rlc_http_requests_total`, `rlc_http_request_duration_seconds`), " +
          "jobs, ingest, revisions, speakers and agents' reports (read from the database at scrape time, cached 2 s), scheduler role, bus state, " +
          "and the standard process metrics (`process_*`, `nodejs_*`). The README's Metrics section lists them all. Keep it off the public network.",
        security: [],
        response: { 200: { description: "The metrics", content: { "text/plain": { schema: z.string() } } } },
      },
      config: { auth: "public" },
    },
    async (_req, reply) => {
      reply.type(registry.contentType);
      return reply.serializer(String).send(await registry.metrics());
    },
  );
});

declare module "fastify" {
  interface FastifyInstance {
    metrics: Registry;
  }
}
