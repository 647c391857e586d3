import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { tool } from "../helpers/tools.js";
import { type ExportedMetrics, exportedMetrics, metricNamesOf } from "./exported-metrics.js";

const dir = join(import.meta.dirname, "../../deploy/prometheus");
const rules = readFileSync(join(dir, "route-lists.rules.yml"), "utf8");
const ruleTests = readFileSync(join(dir, "route-lists.rules.test.yml"), "utf8");
const scrapeExample = readFileSync(join(dir, "prometheus.yml"), "utf8");
const promtool = tool("promtool");

const promtoolRun = (...args: string[]) => spawnSync("promtool", args, { cwd: dir, encoding: "utf8" });

describe("Prometheus alert rules", () => {
  let exported: ExportedMetrics;
  beforeAll(async () => {
    exported = await exportedMetrics();
  }, 120_000);

  it("cover the situations operators asked for", () => {
    const alerts = [...rules.matchAll(/^\s+- alert: (\S+)$/gm)].map((m) => m[1]);
    expect(alerts).toEqual(
      expect.arrayContaining([
        "RouteListAgentSilent",
        "RouteListSpeakerOutOfSync",
        "RouteListBgpSessionDown",
        "RouteListIngestFailing",
        "RouteListRevisionGuardTripped",
        "RouteListJobBacklog",
        "RouteListAuditOutboxBacklog",
      ]),
    );
  });

  it("read only metrics the controller or the agent exports (and Prometheus's own `up`)", () => {
    const exprs = [...rules.matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1] as string);
    expect(exprs.length).toBeGreaterThanOrEqual(7);
    const unknown = exprs.flatMap((e) =>
      metricNamesOf(e)
        .filter((n) => n !== "up" && !exported.all.has(n))
        .map((n) => `${n} in ${e}`),
    );
    expect(unknown).toEqual([]);
  });

  it("read the per-tenant figures from the authenticated scrape only, which the scrape example sets up with authorization", () => {
    // The public /metrics and GET /v1/metrics share no family: a rule's figure comes from one job.
    expect([...exported.public].filter((n) => exported.fleet.has(n))).toEqual([]);
    const perTenant = [...rules.matchAll(/^\s+expr: (.+)$/gm)].map((m) => m[1] as string).filter((e) => /\btenant\b/.test(e));
    expect(perTenant.length).toBeGreaterThanOrEqual(4);
    for (const e of perTenant) for (const n of metricNamesOf(e)) expect(exported.fleet.has(n), `${n} in ${e}`).toBe(true);

    const config = parseYaml(scrapeExample) as { rule_files: string[]; scrape_configs: Record<string, any>[] };
    const job = (name: string) => config.scrape_configs.find((c) => c.job_name === name);
    expect(job("rl-controller-fleet")).toMatchObject({ metrics_path: "/v1/metrics", authorization: { type: "Bearer" } });
    expect(job("rl-controller-fleet")?.authorization.credentials_file).toMatch(/^\//);
    expect(job("rl-controller")?.metrics_path ?? "/metrics").toBe("/metrics");
    expect(job("rl-controller")?.authorization).toBeUndefined();
    expect(job("rl-agent")).toBeDefined();
    expect(config.rule_files.some((f) => f.endsWith("/route-lists.rules.yml"))).toBe(true);

    // The unit tests' series carry the job each figure really comes from.
    const wrongJob: string[] = [];
    for (const m of ruleTests.matchAll(/series: '(rlc_[a-z_]+)\{job="([^"]+)"/g)) {
      const [, name, from] = m as unknown as [string, string, string];
      const expected = exported.fleet.has(name) ? "rl-controller-fleet" : "rl-controller";
      if (from !== expected) wrongJob.push(`${name}: ${from}, expected ${expected}`);
    }
    expect(wrongJob).toEqual([]);
    expect(ruleTests).not.toMatch(/series: 'rlc_[a-z_]+\{instance=/);
  });

  it.skipIf(!promtool.available)("the scrape example passes promtool check config", () => {
    const r = promtoolRun("check", "config", "--syntax-only", "prometheus.yml");
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toContain("SUCCESS");
  });

  it.skipIf(!promtool.available)("pass promtool check rules", () => {
    const r = promtoolRun("check", "rules", "route-lists.rules.yml");
    expect(r.stdout + r.stderr).toContain("SUCCESS");
    expect(r.status, r.stdout + r.stderr).toBe(0);
  });

  it.skipIf(!promtool.available)("pass their unit tests (promtool test rules): each fires when it should, once over two replicas", () => {
    const r = promtoolRun("test", "rules", "route-lists.rules.test.yml");
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout + r.stderr).toContain("SUCCESS");
  });
});
