import type { Histogram, Registry } from "prom-client";

export type RequestLabels = { method: string; route: string; status: string };

/** One label set's counts: `buckets[i]` answers at most `bounds[i]` seconds and above the bound before it. */
export type DurationSeries = { labels: RequestLabels; buckets: Float64Array; sum: number; count: number };

type Value = { labels: Record<string, string | number>; value: number; metricName: string };

/**
 * `rlc_http_request_duration_seconds`: a histogram by method, route pattern and status, kept as
 * plain counts a series and written out at scrape time as prom-client writes a Histogram (the
 * same names, labels and order). prom-client's own `observe` checked the labels, built their
 * key and made a closure and two objects on every request: 0.44 µs a call in a loop and more on
 * the request's path, where it was the largest cost of the metrics (bench/lookup-latency.mjs).
 * Here a request adds to the counts of a series the caller found once per route and status.
 */
export class RequestDurations {
  readonly name = "rlc_http_request_duration_seconds";
  readonly help = "HTTP request latency in seconds, by method, route pattern and status code.";
  readonly type = "histogram";
  readonly aggregator = "sum";
  /** By label set: two routes' configs can share one (every not-found context is route `unmatched`). */
  private readonly all = new Map<string, DurationSeries>();

  constructor(private readonly bounds: readonly number[]) {}

  /** The series of `labels`, for the caller to keep: looked up once per route, method and status, not per request. */
  series(labels: RequestLabels): DurationSeries {
    const key = `${labels.method} ${labels.route} ${labels.status}`;
    let s = this.all.get(key);
    if (!s) this.all.set(key, (s = { labels, buckets: new Float64Array(this.bounds.length), sum: 0, count: 0 }));
    return s;
  }

  observe(s: DurationSeries, seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    if (i < bounds.length) s.buckets[i]!++;
    s.sum += seconds;
    s.count++;
  }

  /** The series in prom-client's Histogram format (`registry.metrics()` and `getMetricsAsJSON()` read it). */
  async get() {
    const values: Value[] = [];
    for (const s of this.all.values()) {
      let below = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        below += s.buckets[i]!;
        values.push({ labels: { le: this.bounds[i]!, ...s.labels }, value: below, metricName: `${this.name}_bucket` });
      }
      values.push({ labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: `${this.name}_bucket` });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum` });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** `registry.resetMetrics()`: every series back to zero (the callers keep theirs). */
  reset(): void {
    for (const s of this.all.values()) {
      s.buckets.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }

  /** On `registry`, beside prom-client's own metrics (which it reads through the same `get`). */
  register(registry: Registry): void {
    registry.registerMetric(this as unknown as Histogram);
  }
}
