import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { z } from "zod";
import { collectDefaultMetrics, Counter, Histogram, Registry } from "prom-client";

/**
 * Prometheus metrics on a registry of this app (tests build many apps in one process):
 * request counts and latency by route pattern and status, plus process metrics.
 */
export default fp(async function metricsPlugin(app: FastifyInstance) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "rlc_" });
  // prom-client names these gauges *_total, which `promtool check metrics` rejects (a _total
  // suffix promises a counter); the handle/request/resource counts are also in the event-loop
  // and heap metrics that stay.
  for (const name of ["nodejs_active_handles_total", "nodejs_active_requests_total", "nodejs_active_resources_total"]) {
    registry.removeSingleMetric(`rlc_${name}`);
  }
  const requests = new Counter({
    name: "rlc_http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status code.",
    labelNames: ["method", "route", "status"] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "rlc_http_request_duration_seconds",
    help: "HTTP request latency in seconds, by method, route pattern and status code.",
    labelNames: ["method", "route", "status"] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  app.decorate("metrics", registry);

  app.addHook("onResponse", async (req, reply) => {
    // The route pattern, never the raw URL: ids in paths would explode the label set.
    const route = req.is404 ? "unmatched" : (req.routeOptions.url ?? "unmatched");
    const labels = { method: req.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
  });

  app.get(
    "/metrics",
    {
      schema: {
        tags: ["metrics"],
        summary: "Prometheus metrics",
        description:
          "Prometheus text exposition format, no authentication: `rlc_http_requests_total` and `rlc_http_request_duration_seconds` " +
          "by method, route pattern and status, and the process metrics (`rlc_process_*`, `rlc_nodejs_*`). Keep it off the public network.",
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
