import Fastify from "fastify";
import { serializerCompiler, validatorCompiler } from "fastify-type-provider-zod";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import metricsPlugin from "./metrics.js";

async function appWithMetrics(serve = true) {
  const app = Fastify();
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  await app.register(metricsPlugin, { registry: new Registry(), serve });
  app.get("/items/:id", async () => ({ ok: true }));
  await app.ready();
  return app;
}

const line = (text: string, start: string) => text.split("\n").find((l) => l.startsWith(start));

describe("request metrics", () => {
  it("count every answer by method, route pattern and status, the same in the counter and the histogram", async () => {
    const app = await appWithMetrics();
    for (const id of ["1", "2", "3"]) await app.inject({ method: "GET", url: `/items/${id}` });
    await app.inject({ method: "GET", url: "/nowhere" });
    const text = (await app.inject({ method: "GET", url: "/metrics" })).body;
    expect(line(text, 'rlc_http_requests_total{method="GET",route="/items/:id",status="200"}')).toMatch(/ 3$/);
    expect(line(text, 'rlc_http_request_duration_seconds_count{method="GET",route="/items/:id",status="200"}')).toMatch(/ 3$/);
    expect(line(text, 'rlc_http_requests_total{method="GET",route="unmatched",status="404"}')).toMatch(/ 1$/);
    await app.close();
  });

  it("scrapes at the same time each report the count once", async () => {
    const app = await appWithMetrics();
    for (const id of ["1", "2"]) await app.inject({ method: "GET", url: `/items/${id}` });
    const [a, b] = await Promise.all([app.metrics.metrics(), app.metrics.metrics()]);
    for (const text of [a, b]) expect(line(text, 'rlc_http_requests_total{method="GET",route="/items/:id",status="200"}')).toMatch(/ 2$/);
    await app.close();
  });

  it("told not to serve /metrics (it has a listener of its own), still counts every answer", async () => {
    const app = await appWithMetrics(false);
    await app.inject({ method: "GET", url: "/items/1" });
    expect((await app.inject({ method: "GET", url: "/metrics" })).statusCode).toBe(404);
    const text = await app.metrics.metrics();
    expect(line(text, 'rlc_http_requests_total{method="GET",route="/items/:id",status="200"}')).toMatch(/ 1$/);
    expect(line(text, 'rlc_http_requests_total{method="GET",route="unmatched",status="404"}')).toMatch(/ 1$/);
    await app.close();
  });
});
