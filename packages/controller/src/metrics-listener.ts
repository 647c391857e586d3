import Fastify from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import type { Registry } from "prom-client";
import { httpTimeouts } from "./app.js";
import type { Config } from "./config.js";
import { metricsRoute } from "./plugins/metrics.js";

/** METRICS_HOST's default: `/metrics` takes no key, so its own listener is reached from this host only unless told. */
export const METRICS_DEFAULT_HOST = "127.0.0.1";

export interface MetricsListener {
  /** `host:port` as bound (with METRICS_PORT=0, the port picked). */
  address: string;
  port: number;
  close(): Promise<void>;
}

/**
 * `/metrics` on a listener of its own (METRICS_HOST:METRICS_PORT), so that it can be bound to an
 * address Prometheus reaches and the API's clients do not. It answers `/metrics` and nothing
 * else (404); the main listener then does not answer it.
 */
export async function listenMetrics(config: Config, registry: Registry): Promise<MetricsListener> {
  const app = Fastify({ logger: false, ...httpTimeouts(config) });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  metricsRoute(app, registry);
  const host = config.METRICS_HOST ?? METRICS_DEFAULT_HOST;
  await app.listen({ host, port: config.METRICS_PORT ?? 0 });
  const bound = app.server.address();
  const port = typeof bound === "object" && bound ? bound.port : (config.METRICS_PORT ?? 0);
  return { address: `${host}:${port}`, port, close: () => app.close() };
}
