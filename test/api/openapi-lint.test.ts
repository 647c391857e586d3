import { spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

const root = fileURLToPath(new URL("../../", import.meta.url));
const redocly = join(root, "node_modules/@redocly/cli/bin/cli.js");

interface LintProblem {
  ruleId: string;
  severity: "error" | "warn";
  message: string;
  location: { pointer: string }[];
}

let t: TestController;
let dir: string;
beforeAll(async () => {
  t = await startTestController();
  dir = await mkdtemp(join(tmpdir(), "rlc-openapi-lint-"));
});
afterAll(async () => {
  await t?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("OpenAPI document", () => {
  it("passes Redocly's recommended rules with no error and no warning", async () => {
    const served = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    const file = join(dir, "openapi.json");
    await writeFile(file, JSON.stringify(served));
    const r = spawnSync(process.execPath, [redocly, "lint", file, "--config", join(root, "redocly.yaml"), "--format", "json"], {
      cwd: root,
      encoding: "utf8",
      // Offline and quiet: no usage report, no check for a newer release.
      env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
      timeout: 60_000,
    });
    const start = r.stdout.indexOf("{");
    expect(start, `redocly printed no report: ${r.stderr}`).toBeGreaterThanOrEqual(0);
    const report = JSON.parse(r.stdout.slice(start)) as { problems: LintProblem[] };
    const found = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    expect(found).toEqual([]);
  });

  it("keeps only the schemas an operation reaches", async () => {
    const served = (await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json();
    // The events' payloads are the AsyncAPI document's, not this one's.
    expect(served.components.schemas).not.toHaveProperty("StatusReportEvent");
    expect(served.components.schemas).toHaveProperty("Problem");
  });
});

describe("unversioned probes", () => {
  it("answer 400 to a query parameter they would otherwise ignore", async () => {
    for (const url of ["/health?verbose=1", "/version?x=1", "/v1/health?verbose=1"]) {
      const res = await t.call(null, { method: "GET", url });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().code, url).toBe("validation_failed");
    }
    expect((await t.call(null, { method: "GET", url: "/health" })).statusCode).toBe(200);
  });
});
