import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { tool } from "../helpers/tools.js";
import { exportedMetricNames, metricNamesOf } from "./exported-metrics.js";

const dir = join(import.meta.dirname, "../../deploy/prometheus");
const rules = readFileSync(join(dir, "route-lists.rules.yml"), "utf8");
const promtool = tool("promtool");

const promtoolRun = (...args: string[]) => spawnSync("promtool", args, { cwd: dir, encoding: "utf8" });

describe("Prometheus alert rules", () => {
  let exported: Set<string>;
  beforeAll(async () => {
    exported = await exportedMetricNames();
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
        .filter((n) => n !== "up" && !exported.has(n))
        .map((n) => `${n} in ${e}`),
    );
    expect(unknown).toEqual([]);
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
