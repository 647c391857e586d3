import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { RequestDurations } from "./request-durations.js";

const BOUNDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const OBSERVED: [string, string, string, number][] = [
  ["GET", "/v1/lookup", "200", 0.0004],
  ["GET", "/v1/lookup", "200", 0.001],
  ["GET", "/v1/lookup", "200", 0.0031],
  ["GET", "/v1/lookup", "400", 0.7],
  ["POST", "/v1/modules", "201", 12],
  ["GET", "unmatched", "404", 0.02],
];

describe("RequestDurations", () => {
  it("writes the text and JSON that prom-client's Histogram writes for the same observations", async () => {
    const theirs = new Registry();
    const histogram = new Histogram({
      name: "rlc_http_request_duration_seconds",
      help: "HTTP request latency in seconds, by method, route pattern and status code.",
      labelNames: ["method", "route", "status"] as const,
      buckets: BOUNDS,
      registers: [theirs],
    });
    const ours = new Registry();
    const durations = new RequestDurations(BOUNDS);
    durations.register(ours);
    for (const [method, route, status, seconds] of OBSERVED) {
      histogram.observe({ method, route, status }, seconds);
      // A second route config with the same labels (two not-found contexts) adds to the same series.
      durations.observe(durations.series({ method, route, status }), seconds);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    // prom-client's JSON also has an empty `exemplar` a value (exemplars are off).
    const withoutExemplars = (metrics: Awaited<ReturnType<Registry["getMetricsAsJSON"]>>) =>
      metrics.map((m) => ({ ...m, values: m.values.map(({ exemplar: _, ...v }: { exemplar?: unknown }) => v) }));
    expect(withoutExemplars(await ours.getMetricsAsJSON())).toEqual(withoutExemplars(await theirs.getMetricsAsJSON()));
  });

  it("counts an answer slower than the last bound in +Inf only", async () => {
    const durations = new RequestDurations([0.1, 1]);
    const series = durations.series({ method: "GET", route: "/x", status: "200" });
    durations.observe(series, 0.1);
    durations.observe(series, 5);
    const { values } = await durations.get();
    const buckets = values.filter((v) => v.metricName.endsWith("_bucket")).map((v) => [v.labels.le, v.value]);
    expect(buckets).toEqual([
      [0.1, 1],
      [1, 1],
      ["+Inf", 2],
    ]);
  });
});
