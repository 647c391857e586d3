import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tool } from "../helpers/tools.js";
import { type ExportedMetrics, exportedMetrics, metricNamesOf } from "./exported-metrics.js";

const dir = join(import.meta.dirname, "../../deploy/grafana");
const boards = readdirSync(join(dir, "dashboards"))
  .filter((f) => f.endsWith(".json"))
  .map((f) => ({ file: f, json: JSON.parse(readFileSync(join(dir, "dashboards", f), "utf8")) }));

interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: { expr: string; refId: string }[];
  panels?: Panel[];
}
const panelsOf = (b: { panels: Panel[] }): Panel[] => b.panels.flatMap((p) => [p, ...(p.panels ?? [])]);

/** Grafana's reference to the dashboard's `datasource` variable. */
const DATASOURCE_VARIABLE = ["$", "{datasource}"].join("");

const promtool = tool("promtool");

let exported: ExportedMetrics;
beforeAll(async () => {
  exported = await exportedMetrics();
}, 120_000);

describe("Grafana dashboards", () => {
  it("the query check finds the metric names in PromQL and nothing else", () => {
    expect(
      metricNamesOf(
        'histogram_quantile(0.95, sum by (le, type) (rate(rlc_job_run_duration_seconds_bucket{type="a b"}[$__rate_interval]))) * on (tenant) group_left (name) max by (tenant, name) (rlc_tenant_info) > 1e3',
      ),
    ).toEqual(["rlc_job_run_duration_seconds_bucket", "rlc_tenant_info"]);
    expect(metricNamesOf("time() - rl_agent_last_applied_timestamp_seconds == 0")).toEqual(["rl_agent_last_applied_timestamp_seconds"]);
  });

  it("there is a fleet and a routers dashboard, with unique uids and panel ids", () => {
    expect(boards.map((b) => b.json.uid).sort()).toEqual(["rl-fleet", "rl-routers"]);
    for (const b of boards) {
      const ids = panelsOf(b.json).map((p) => p.id);
      expect(new Set(ids).size, b.file).toBe(ids.length);
      expect(panelsOf(b.json).filter((p) => p.type !== "row").length, b.file).toBeGreaterThanOrEqual(15);
    }
  });

  it("every panel query names only metrics the controller or the agent exports", () => {
    const unknown: string[] = [];
    for (const b of boards) {
      const queries = [
        ...panelsOf(b.json).flatMap((p) => (p.targets ?? []).map((t) => ({ where: `${b.file} "${p.title}" ${t.refId}`, expr: t.expr }))),
        ...b.json.templating.list
          .filter((v: { type: string }) => v.type === "query")
          .map((v: { name: string; query: { query: string } }) => ({
            where: `${b.file} variable ${v.name}`,
            expr: v.query.query.replace(/^label_values\(([^,)]+).*$/, "$1"),
          })),
      ];
      for (const q of queries) {
        const names = metricNamesOf(q.expr);
        if (!names.length) unknown.push(`${q.where}: names no metric`);
        for (const n of names) if (!exported.all.has(n)) unknown.push(`${q.where}: ${n}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it("the tenant variable and the per-tenant panels read GET /v1/metrics (the authenticated scrape), the rest the public /metrics or the agents", () => {
    const wrong: string[] = [];
    for (const b of boards) {
      const tenantVariable = b.json.templating.list.find((v: { name: string }) => v.name === "tenant");
      for (const n of metricNamesOf(tenantVariable.query.query.replace(/^label_values\(([^,)]+).*$/, "$1"))) {
        if (!exported.fleet.has(n)) wrong.push(`${b.file} variable tenant: ${n}`);
      }
      for (const p of panelsOf(b.json)) {
        for (const t of p.targets ?? []) {
          const names = metricNamesOf(t.expr);
          const perTenant = t.expr.includes("$tenant");
          // A per-tenant query reads only the fleet's figures, and every fleet figure is chosen by tenant.
          for (const n of names) if (perTenant !== exported.fleet.has(n)) wrong.push(`${b.file} "${p.title}" ${t.refId}: ${n}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it.skipIf(!promtool.available)("every panel query is valid PromQL (promtool parses them as recording rules)", () => {
    // Grafana's variables as Prometheus would receive them once substituted.
    const substitute = (e: string) => e.replaceAll("$__rate_interval", "5m").replace(/\$[a-z]+/g, ".*");
    const rules = boards.flatMap((b) =>
      panelsOf(b.json).flatMap((p) =>
        (p.targets ?? []).map(
          (t) => `      - record: ${b.json.uid.replace("-", "_")}:panel${p.id}:${t.refId}\n        expr: ${JSON.stringify(substitute(t.expr))}`,
        ),
      ),
    );
    const dir = mkdtempSync(join(tmpdir(), "rl-dashboards-"));
    try {
      writeFileSync(join(dir, "panels.yml"), `groups:\n  - name: panels\n    rules:\n${rules.join("\n")}\n`);
      const r = spawnSync("promtool", ["check", "rules", join(dir, "panels.yml")], { encoding: "utf8" });
      expect(r.status, r.stdout + r.stderr).toBe(0);
      expect(r.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("every panel with queries uses the dashboard's data source variable", () => {
    for (const b of boards) {
      for (const p of panelsOf(b.json).filter((p) => p.targets?.length)) {
        expect((p as unknown as { datasource: { uid: string } }).datasource.uid, `${b.file} ${p.title}`).toBe(DATASOURCE_VARIABLE);
      }
    }
  });

  it("provisioning names a Prometheus data source and loads the dashboards from files", () => {
    const ds = readFileSync(join(dir, "provisioning/datasources/route-lists.yml"), "utf8");
    expect(ds).toMatch(/type: prometheus/);
    const provider = readFileSync(join(dir, "provisioning/dashboards/route-lists.yml"), "utf8");
    expect(provider).toMatch(/type: file/);
    expect(provider).toMatch(/path: \/var\/lib\/grafana\/dashboards\/route-lists/);
  });
});
