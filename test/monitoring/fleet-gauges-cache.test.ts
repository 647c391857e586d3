import { createSystemClock } from "@rlc/shared/time";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Database, openDatabase } from "../../packages/controller/src/db/connect.js";
import { registerFleetGauges } from "../../packages/controller/src/metrics/fleet-gauges.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

/*
 * A scrape storm must not turn into a query storm: every figure is one query whose answer
 * serves the scrapes of the next couple of seconds, concurrent ones included.
 */

let db: TestDatabase;
let database: Database;
beforeAll(async () => {
  db = await createTestDatabase();
  database = await openDatabase({ url: db.url, dataDir: "" });
  await database.sql`INSERT INTO tenants (id, name, created_at) VALUES (gen_random_uuid(), 'acme', now())`;
});
afterAll(async () => {
  await database?.close();
  await db?.drop();
});

/** The database's statements, counted as they are sent (sql`…` calls). */
function counting(sql: Database["sql"]) {
  const seen: string[] = [];
  const proxy = new Proxy(sql, {
    apply(target, thisArg, args: unknown[]) {
      const first = args[0] as TemplateStringsArray | undefined;
      if (Array.isArray(first) && "raw" in first) seen.push(first.join("?").replace(/\s+/g, " ").trim().slice(0, 60));
      return Reflect.apply(target, thisArg, args);
    },
  });
  return { sql: proxy, seen };
}

describe("fleet gauges", () => {
  it("twenty scrapes at once and ten more right after cost one query per figure", async () => {
    const { sql, seen } = counting(database.sql);
    const registry = new Registry();
    registerFleetGauges({ registry, sql, clock: createSystemClock(), cacheMs: 60_000 });
    const texts = await Promise.all(Array.from({ length: 20 }, () => registry.metrics()));
    for (let i = 0; i < 10; i++) texts.push(await registry.metrics());
    expect(new Set(texts).size).toBe(1);
    // jobs, speakers, speaker reports, revisions, modules, audit outbox, tenants
    expect(seen).toHaveLength(7);
    expect(texts[0]).toMatch(/^rlc_tenant_info\{tenant="[0-9a-f-]+",name="acme"\} 1$/m);
  });

  it("answers again from the database once the cached answer is older than its window", async () => {
    const { sql, seen } = counting(database.sql);
    const registry = new Registry();
    registerFleetGauges({ registry, sql, clock: createSystemClock(), cacheMs: 50 });
    await registry.metrics();
    await new Promise((r) => setTimeout(r, 100));
    await registry.metrics();
    expect(seen).toHaveLength(14);
  });

  it("a query that fails leaves its figure out and counts the error; the scrape still answers", async () => {
    const broken = new Proxy(database.sql, {
      apply(target, thisArg, args: unknown[]) {
        const first = args[0] as TemplateStringsArray;
        if (Array.isArray(first) && first.join("").includes("audit_outbox")) return Promise.reject(new Error("relation is gone"));
        return Reflect.apply(target, thisArg, args);
      },
    });
    const registry = new Registry();
    const errors: string[] = [];
    registerFleetGauges({ registry, sql: broken, clock: createSystemClock(), onError: (q) => errors.push(q) });
    const text = await registry.metrics();
    // One failed query, though two gauges read it.
    expect(errors).toEqual(["audit_outbox"]);
    expect(text).toContain('rlc_fleet_query_errors_total{query="audit_outbox"} 1');
    expect(text).toMatch(/^rlc_audit_outbox_records nan$/im);
    expect(text).toMatch(/^rlc_tenant_info\{/m);
  });

  it("a query that does not answer is given up: the scrape answers without its figure", async () => {
    const stuck = new Proxy(database.sql, {
      apply(target, thisArg, args: unknown[]) {
        const first = args[0] as TemplateStringsArray;
        if (Array.isArray(first) && first.join("").includes("audit_outbox")) return new Promise(() => {});
        return Reflect.apply(target, thisArg, args);
      },
    });
    const registry = new Registry();
    const errors: string[] = [];
    registerFleetGauges({ registry, sql: stuck, clock: createSystemClock(), timeoutMs: 200, onError: (q) => errors.push(q) });
    const text = await registry.metrics();
    expect(errors).toEqual(["audit_outbox"]);
    expect(text).toMatch(/^rlc_audit_outbox_records nan$/im);
    expect(text).toMatch(/^rlc_tenant_info\{/m);
  });
});
