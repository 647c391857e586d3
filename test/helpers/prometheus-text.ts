/** One series of a Prometheus text exposition: its name, labels and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Every sample line of the text (comments left out), labels unescaped no further than the tests need. */
export function samplesOf(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? "").matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    const raw = m[3]!;
    out.push({ name: m[1]!, labels, value: raw === "+Inf" ? Number.POSITIVE_INFINITY : raw === "-Inf" ? Number.NEGATIVE_INFINITY : Number(raw) });
  }
  return out;
}

/** The value of one series, matched on the labels given (others may be present), or null. */
export function sampleValue(text: string, name: string, labels: Record<string, string> = {}): number | null {
  const s = samplesOf(text).find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  return s ? s.value : null;
}
