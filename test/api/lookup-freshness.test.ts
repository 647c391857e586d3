import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRevisionStore } from "../../packages/controller/src/services/revisions/revision-store.js";
import { createLookupService } from "../../packages/controller/src/services/route-lists/lookup.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// One process (app-all, in-process bus): a write is seen by the very next lookup, though the
// view was checked against the database a moment before (the 1 s revalidation would miss it).
let t: TestController;
const call = (method: string, url: string, payload?: unknown, key = t.rootKey) =>
  t.call(key, { method: method as never, url, ...(payload === undefined ? {} : { payload: payload as never }) });
const lookup = async (q: string, key = t.rootKey) => (await call("GET", `/v1/lookup?q=${encodeURIComponent(q)}`, undefined, key)).json();

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => {
  await t?.close();
});

describe("lookup reads its own writes", () => {
  it("an entry added, changed or deleted shows in the next lookup", async () => {
    const mod = (await call("POST", "/v1/modules", { name: "ryw", type: "IP_RANGES" })).json();
    expect((await lookup("10.77.1.1")).matched).toBe(false); // the view is built and fresh now
    const entry = await call("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "10.77.0.0/16" });
    expect(entry.statusCode).toBe(201);
    const hit = await lookup("10.77.1.1");
    expect(hit.matches).toEqual([expect.objectContaining({ layer: "entry", module_id: mod.id, value: "10.77.0.0/16" })]);

    await call("PATCH", `/v1/modules/${mod.id}`, { name: "ryw-renamed" });
    expect((await lookup("10.77.1.1")).matches[0].module_name).toBe("ryw-renamed");
    expect((await call("DELETE", `/v1/modules/${mod.id}/ip-range-entries/${entry.json().id}`)).statusCode).toBe(204);
    expect((await lookup("10.77.1.1")).matched).toBe(false);
  });

  it("a refresh with ?wait=true shows in the next lookup's revision layer", async () => {
    const mod = (await call("POST", "/v1/modules", { name: "ryw-rev", type: "IP_RANGES" })).json();
    await call("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.78.0.0/16" });
    const before = await lookup("11.78.1.1");
    expect(before.revision).toBeNull();
    // Lookups keep coming while the refresh runs, so the view is always freshly checked (as
    // under load): only a notice of the refresh's end can make the next one see the revision.
    let busy = true;
    const background = (async () => {
      while (busy) {
        await lookup("11.78.1.1");
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    const refreshed = await call("POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    const after = await lookup("11.78.1.1");
    busy = false;
    await background;
    expect(after.revision).toMatchObject({ revision_id: refreshed.json().result.revision_id, prefix: "11.78.0.0/16" });
    expect(after.matches.map((m: { layer: string }) => m.layer).sort()).toEqual(["entry", "snapshot"]);
  });

  it("another tenant's write leaves this tenant's view alone", async () => {
    const b = (await call("POST", "/v1/tenants", { name: "ryw-b" })).json();
    const keyB = b.admin_key.secret as string;
    const modB = (await call("POST", "/v1/modules", { name: "b", type: "IP_RANGES" }, keyB)).json();
    await call("POST", `/v1/modules/${modB.id}/ip-range-entries`, { cidr: "10.79.0.0/16" }, keyB);
    expect((await lookup("10.79.1.1", keyB)).matched).toBe(true);
    expect((await lookup("10.79.1.1")).matched).toBe(false);
  });
});

describe("lookup views within a memory budget", () => {
  it("keeps the most recently used tenants' views and drops the least recently used past the budget", async () => {
    const tenants: { id: string; key: string }[] = [];
    for (const name of ["lru-1", "lru-2", "lru-3"]) {
      const created = (await call("POST", "/v1/tenants", { name })).json();
      const key = created.admin_key.secret as string;
      const mod = (await call("POST", "/v1/modules", { name: "m", type: "IP_RANGES" }, key)).json();
      for (let i = 0; i < 20; i++) await call("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: `11.${80 + tenants.length}.${i}.0/24` }, key);
      expect((await call("POST", `/v1/modules/${mod.id}/refresh?wait=true`, undefined, key)).statusCode).toBe(200);
      tenants.push({ id: created.tenant_id, key });
    }
    // One tenant's view, measured; the three are alike. The budget holds two and a half.
    const sql = t.controller.db.sql;
    const probe = createLookupService({ sql, revisions: createRevisionStore() });
    await probe.lookup(tenants[0]!.id, "11.80.3.1");
    await new Promise((r) => setTimeout(r, 20));
    const one = probe.cacheStats().bytes;
    expect(one).toBeGreaterThan(0);
    const service = createLookupService({ sql, revisions: createRevisionStore(), budgetBytes: Math.floor(2.5 * one) });
    for (const [i, tenant] of tenants.entries()) {
      const answer = await service.lookup(tenant.id, `11.${80 + i}.3.1`);
      expect(answer.matched).toBe(true);
      expect(answer.revision).not.toBeNull();
    }
    await new Promise((r) => setTimeout(r, 20));
    const stats = service.cacheStats();
    expect(stats.bytes).toBeLessThanOrEqual(stats.budget);
    expect(stats.tenants).toEqual([tenants[1]!.id, tenants[2]!.id]);
    // Using tenant 2 makes it the most recent: tenant 3 goes when tenant 1 comes back.
    await service.lookup(tenants[1]!.id, "11.81.3.1");
    await service.lookup(tenants[0]!.id, "11.80.3.1");
    await new Promise((r) => setTimeout(r, 20));
    expect(service.cacheStats().tenants).toEqual([tenants[1]!.id, tenants[0]!.id]);
  });
});
