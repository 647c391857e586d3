import { createSystemClock } from "@rlc/shared/time";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../packages/controller/src/db/connect.js";
import { registerDeploymentGauges } from "../../packages/controller/src/metrics/deployment-gauges.js";
import { createFleetReads, type FleetReadOptions } from "../../packages/controller/src/metrics/fleet-reads.js";
import { createTenantMetrics } from "../../packages/controller/src/metrics/tenant-metrics.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/*
 * A scrape storm must not turn into a query storm: every figure is one query per scope (all
 * tenants, or one) whose answer serves the scrapes of the next couple of seconds, concurrent
 * ones included.
 */

let db: TestDatabase;
let database: Database;
let acmeId: string;
let betaId: string;
beforeAll(async () => {
  db = await createTestDatabase();
  database = await openDatabase({ url: db.url, dataDir: "" });
  const tenant = async (name: string) =>
    (await database.sql<{ id: string }[]>`INSERT INTO tenants (id, name, created_at) VALUES (gen_random_uuid(), ${name}, now()) RETURNING id`)[0]!.id;
  acmeId = await tenant("acme");
  betaId = await tenant("beta");
});
afterAll(async () => {
  await database?.close();
  await db?.drop();
});

/** The database's statements, counted as they are sent (sql`…` calls; the fragments inside them are not statements). */
function counting(sql: Database["sql"]) {
  const seen: string[] = [];
  const proxy = new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const first = args[0] as TemplateStringsArray | undefined;
      const text = Array.isArray(first) && "raw" in first ? first.join("?").replace(/\s+/g, " ").trim() : "";
      if (/^SELECT /.test(text)) seen.push(text.slice(0, 60));
      return Reflect.apply(target, thisArg, args);
    },
  });
  return { sql: proxy, seen };
}

/** A public registry and the fleet detail on one set of reads, as the controller has them. */
function metricsOn(o: Omit<FleetReadOptions, "clock">) {
  const clock = createSystemClock();
  const reads = createFleetReads({ ...o, clock });
  const registry = new Registry();
  registerDeploymentGauges({ registry, reads, clock });
  return { registry, fleet: createTenantMetrics({ reads, clock }) };
}

describe("fleet gauges", () => {
  it("twenty public scrapes at once and ten more right after cost one query per figure", async () => {
    const { sql, seen } = counting(database.sql);
    const { registry } = metricsOn({ sql, cacheMs: 60_000 });
    const texts = await Promise.all(Array.from({ length: 20 }, () => registry.metrics()));
    for (let i = 0; i < 10; i++) texts.push(await registry.metrics());
    expect(new Set(texts).size).toBe(1);
    // jobs, speakers, modules, audit outbox
    expect(seen).toHaveLength(4);
    expect(texts[0]).toMatch(/^rlc_deployment_speakers\{sync_status="unknown"\} 0$/m);
    expect(texts[0]).not.toContain("acme");
  });

  it("the deployment's fleet scrape shares the public scrape's answers; each tenant's scrape has its own", async () => {
    const { sql, seen } = counting(database.sql);
    const { registry, fleet } = metricsOn({ sql, cacheMs: 60_000 });
    await registry.metrics();
    const all = await Promise.all(Array.from({ length: 10 }, () => fleet.render(null)));
    // …and reports, revisions, tenants
    expect(seen).toHaveLength(7);
    expect(all[0]).toMatch(new RegExp(`^rlc_tenant_info\\{tenant="${acmeId}",name="acme"\\} 1$`, "m"));
    expect(all[0]).toContain(betaId);
    const acme = await Promise.all(Array.from({ length: 10 }, () => fleet.render(acmeId)));
    expect(new Set(acme).size).toBe(1);
    // one tenant's six figures
    expect(seen).toHaveLength(13);
    expect(acme[0]).toMatch(new RegExp(`^rlc_tenant_info\\{tenant="${acmeId}",name="acme"\\} 1$`, "m"));
    expect(acme[0]).not.toContain(betaId);
    expect(acme[0]).not.toContain("beta");
  });

  it("a tenant's failed sources are in that tenant's scrape only, and counted by kind in the public one", async () => {
    const clock = createSystemClock();
    const reads = createFleetReads({ sql: database.sql, clock });
    const fleet = createTenantMetrics({ reads, clock });
    fleet.sourceFailed(acmeId, "cdn");
    fleet.sourceFailed(acmeId, "cdn");
    expect(await fleet.render(acmeId)).toContain(`rlc_ingest_source_failures_total{tenant="${acmeId}",kind="cdn"} 2`);
    expect(await fleet.render(betaId)).not.toMatch(/^rlc_ingest_source_failures_total\{/m);
  });

  it("answers again from the database once the cached answer is older than its window", async () => {
    const { sql, seen } = counting(database.sql);
    const { registry } = metricsOn({ sql, cacheMs: 50 });
    await registry.metrics();
    await new Promise((r) => setTimeout(r, 100));
    await registry.metrics();
    expect(seen).toHaveLength(8);
  });

  it("a query that fails leaves its figure out and counts the error; the scrape still answers", async () => {
    const broken = new Proxy(database.sql, {
      apply(target, thisArg, args: unknown[]) {
        const first = args[0] as TemplateStringsArray;
        if (Array.isArray(first) && first.join("").includes("audit_outbox")) return Promise.reject(new Error("relation is gone"));
        return Reflect.apply(target, thisArg, args);
      },
    });
    const errors: string[] = [];
    const { registry } = metricsOn({ sql: broken, onError: (q) => errors.push(q) });
    const text = await registry.metrics();
    // One failed query, though two gauges read it.
    expect(errors).toEqual(["audit_outbox"]);
    expect(text).toContain('rlc_fleet_query_errors_total{query="audit_outbox"} 1');
    expect(text).toMatch(/^rlc_audit_outbox_records nan$/im);
    expect(text).toMatch(/^rlc_deployment_speakers\{/m);
  });

  it("a query that does not answer is given up: the scrape answers without its figure", async () => {
    const stuck = new Proxy(database.sql, {
      apply(target, thisArg, args: unknown[]) {
        const first = args[0] as TemplateStringsArray;
        if (Array.isArray(first) && first.join("").includes("audit_outbox")) return new Promise(() => {});
        return Reflect.apply(target, thisArg, args);
      },
    });
    const errors: string[] = [];
    const { registry } = metricsOn({ sql: stuck, timeoutMs: 200, onError: (q) => errors.push(q) });
    const text = await registry.metrics();
    expect(errors).toEqual(["audit_outbox"]);
    expect(text).toMatch(/^rlc_audit_outbox_records nan$/im);
    expect(text).toMatch(/^rlc_deployment_speakers\{/m);
  });
});
