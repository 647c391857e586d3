import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AgentMetrics } from "../../packages/agent/src/http/metrics.js";
import { parseProtocolsAll } from "../../packages/shared/src/bird/status/parse-protocols.js";
import { startTestController } from "../helpers/controller.js";

/** Every series name a text exposition declares (`# TYPE`), histograms with their _bucket, _sum and _count. */
export function declaredNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === "histogram" || type === "summary") for (const s of ["_bucket", "_sum", "_count"]) names.add(`${name}${s}`);
  }
  return names;
}

/** A busy agent's /metrics: a captured `show protocols all`, an apply, a probation, failures and reports. */
export function busyAgentMetricsText(): string {
  const text = readFileSync(join(import.meta.dirname, "../../packages/shared/src/bird/status/fixtures/established.txt"), "utf8");
  const now = new Date("2026-11-22T05:00:00Z");
  const m = new AgentMetrics({ version: "0.0.0", speakerId: "0192f3a4-0000-7000-8000-0000000000aa", now: () => now.getTime() });
  const parsed = parseProtocolsAll(text, { now, timeZone: "utc" });
  m.setBird(true, parsed.protocols, parsed.sessions, text);
  m.recordApplied({ revision_id: 4, sequence: 9, applied_at: "2026-11-22T04:00:00.000Z" });
  m.recordProbation("reverted", "sessions_established", 2000);
  m.setProbation({ revision_id: 5, since: "2026-11-22T04:59:00.000Z" });
  m.recordFailure("bird_config_invalid");
  m.recordFallback("fetch_bundle");
  m.recordReport(true);
  return m.render();
}

/** What the project exports, by where it is scraped. */
export interface ExportedMetrics {
  /** A controller's public /metrics (the scrape job `rl-controller`). */
  public: Set<string>;
  /** A controller's GET /v1/metrics, with a key (`rl-controller-fleet`). */
  fleet: Set<string>;
  /** A busy agent's (`rl-agent`). */
  agent: Set<string>;
  all: Set<string>;
}

/** A running controller's two scrapes (every family registered) and a busy agent's. */
export async function exportedMetrics(): Promise<ExportedMetrics> {
  const t = await startTestController();
  try {
    const pub = declaredNames((await t.call(null, { method: "GET", url: "/metrics" })).body);
    const fleet = declaredNames((await t.call(t.rootKey, { method: "GET", url: "/v1/metrics" })).body);
    const agent = declaredNames(busyAgentMetricsText());
    return { public: pub, fleet, agent, all: new Set([...pub, ...fleet, ...agent]) };
  } finally {
    await t.close();
  }
}

const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"]);

/**
 * The metric names a PromQL expression reads: identifiers left once strings, label matchers
 * (`{…}`), ranges (`[…]`) and label lists (`by (…)`, `on (…)`, …) are taken out, other than
 * function names (followed by `(`), keywords and numbers.
 */
export function metricNamesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names: string[] = [];
  for (const m of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice((m.index ?? 0) + m[0].length).trimStart();
    if (after.startsWith("(") || KEYWORDS.has(m[0].toLowerCase())) continue;
    if (/\d/.test(bare[(m.index ?? 0) - 1] ?? "")) continue; // the "e5" of 1e5, the "m" of 5m
    names.push(m[0]);
  }
  return names;
}
