import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { manualClock, startTestController, type TestController } from "../helpers/controller.js";
import { startFeedServer } from "../helpers/feeds.js";

const HOUR = 3_600_000;
const clock = manualClock(new Date());
let t: TestController;
let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let key: string;

const call = (method: "GET" | "POST" | "PATCH", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });
const post = async (url: string, payload: object) => {
  const res = await call("POST", url, payload);
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
/** A module with one CDN feed that gives `prefixes`; its id and the feed's. */
const feedModule = async (name: string, prefixes: string[], extra: object = {}) => {
  feeds.text(`/${name}.txt`, prefixes);
  const m = await post("/v1/modules", { name, type: "IP_RANGES", ...extra });
  const s = await post(`/v1/modules/${m.id}/cdn-sources`, { url: `${feeds.base}/${name}.txt`, format: "text" });
  return { id: m.id as string, source: s.id as string, module: m };
};
const refresh = async (moduleId: string, body: object = {}) => {
  const res = await call("POST", `/v1/modules/${moduleId}/refresh?wait=true`, body);
  return res;
};
const announced = async () => (await call("GET", "/v1/revisions?limit=1")).json().items[0].revision_id as number;
const prefixesOf = async (revisionId: number) =>
  (await call("GET", `/v1/revisions/${revisionId}/prefixes?limit=500`)).json().items.map((p: { prefix: string }) => p.prefix) as string[];
const snapshotRows = async (moduleId: string) =>
  Number((await t.controller.db.sql`SELECT count(*)::int AS n FROM snapshots WHERE module_id = ${moduleId}`)[0]!.n);

let start = 0;
let A: Awaited<ReturnType<typeof feedModule>>;
let B: Awaited<ReturnType<typeof feedModule>>;
let C: Awaited<ReturnType<typeof feedModule>>;
let F: Awaited<ReturnType<typeof feedModule>>;
let G: Awaited<ReturnType<typeof feedModule>>;

beforeAll(async () => {
  feeds = await startFeedServer();
  t = await startTestController({ env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" }, clock });
  key = t.rootKey;
  // A base the drops below stay small against (the mass-withdrawal guard allows 50%).
  const base = await post("/v1/modules", { name: "base", type: "IP_RANGES" });
  for (let i = 0; i < 8; i++) await post(`/v1/modules/${base.id}/ip-range-entries`, { cidr: `31.${i * 2}.0.0/16` });
  A = await feedModule("day", ["41.0.0.0/16"], { max_stale_hours: 24 });
  B = await feedModule("forever", ["42.0.0.0/16"], { max_stale_hours: null });
  C = await feedModule("tenant-default", ["43.0.0.0/16"]);
  F = await feedModule("tenant-set", ["44.0.0.0/16"], { max_stale_hours: "tenant" });
  G = await feedModule(
    "big",
    Array.from({ length: 20 }, (_, i) => `50.${i * 2}.0.0/16`),
    { max_stale_hours: 1 },
  );
  start = clock.now();
  const first = await call("POST", "/v1/modules/refresh?wait=true", {});
  expect(first.statusCode, first.body).toBe(200);
  for (const name of ["day", "forever", "tenant-default", "tenant-set", "big"]) feeds.routes.set(`/${name}.txt`, { status: 503, body: "down" });
});
afterAll(async () => {
  await t?.close();
  await feeds?.close();
});

const at = (hours: number) => {
  clock.advance(start + hours * HOUR - clock.now());
};

describe("sources that go stale", () => {
  it("a module says its budget: a number, null (forever) or the tenant's setting", () => {
    expect([A.module.max_stale_hours, B.module.max_stale_hours, C.module.max_stale_hours, F.module.max_stale_hours]).toEqual([24, null, "tenant", "tenant"]);
  });

  it("a failed source keeps its last good records within the budget, and loses them at the first refresh past it", async () => {
    at(23);
    const kept = await refresh(A.id);
    expect(kept.statusCode, kept.body).toBe(200);
    expect(kept.json().result.warnings).toEqual([expect.objectContaining({ source: `cdn:${A.source}` })]);
    expect(kept.json().result.modules[0]).toMatchObject({ sources_failed: 1, sources_stale: 0 });
    expect(await prefixesOf(await announced())).toContain("41.0.0.0/16");

    at(25);
    const dropped = await refresh(A.id);
    expect(dropped.statusCode, dropped.body).toBe(200);
    const result = dropped.json().result;
    expect(result.warnings).toEqual([
      expect.objectContaining({ source: `cdn:${A.source}` }),
      expect.objectContaining({ module_id: A.id, source: `stale:cdn:${A.source}`, message: expect.stringContaining("max_stale_hours (24)") }),
    ]);
    expect(result.modules[0]).toMatchObject({ module_id: A.id, sources_failed: 1, sources_stale: 1, prefix_count: 0 });
    expect(await prefixesOf(result.revision_id)).not.toContain("41.0.0.0/16");
    expect(await snapshotRows(A.id)).toBe(0);

    const metrics = (await call("GET", "/v1/metrics")).body;
    expect(metrics).toMatch(/rlc_ingest_sources_stale_total\{tenant="[^"]+",kind="cdn"\} 1/);

    // The feed back: its records are back.
    feeds.text("/day.txt", ["41.0.0.0/16"]);
    const back = await refresh(A.id);
    expect(back.json().result.modules[0]).toMatchObject({ sources_ok: 1, sources_stale: 0 });
    expect(await prefixesOf(back.json().result.revision_id)).toContain("41.0.0.0/16");
  });

  it("the tenant's source_max_stale_hours applies to a module that follows it", async () => {
    expect((await call("PATCH", "/v1/settings", { source_max_stale_hours: 30 })).statusCode).toBe(200);
    at(29);
    expect((await refresh(F.id)).json().result.modules[0]).toMatchObject({ sources_stale: 0, prefix_count: 1 });
    at(31);
    const res = (await refresh(F.id)).json().result;
    expect(res.modules[0]).toMatchObject({ sources_stale: 1, prefix_count: 0 });
    expect(res.warnings.map((w: { source: string }) => w.source)).toContain(`stale:cdn:${F.source}`);
    expect((await call("PATCH", "/v1/settings", { source_max_stale_hours: "soon" })).statusCode).toBe(400);
    expect((await call("PATCH", "/v1/settings", { source_max_stale_hours: null })).statusCode).toBe(200);
  });

  it("without the setting a week applies (168 hours)", async () => {
    at(167);
    expect((await refresh(C.id)).json().result.modules[0]).toMatchObject({ sources_stale: 0, prefix_count: 1 });
    at(169);
    expect((await refresh(C.id)).json().result.modules[0]).toMatchObject({ sources_stale: 1, prefix_count: 0 });
  });

  it("null keeps the last good records forever", async () => {
    at(10_000);
    const res = (await refresh(B.id)).json().result;
    expect(res.modules[0]).toMatchObject({ sources_failed: 1, sources_stale: 0, prefix_count: 1 });
    expect(await prefixesOf(await announced())).toContain("42.0.0.0/16");
  });

  it("the mass-withdrawal guard still holds a stale drop that would withdraw most of the revision", async () => {
    const before = await announced();
    const tripped = await refresh(G.id);
    expect(tripped.statusCode).toBe(422);
    expect(tripped.json()).toMatchObject({ code: "revision_guard_tripped" });
    expect(await announced()).toBe(before);
    expect(await snapshotRows(G.id)).toBe(1);
    const forced = await refresh(G.id, { force: true });
    expect(forced.statusCode, forced.body).toBe(200);
    expect(forced.json().result.modules[0]).toMatchObject({ sources_stale: 1, prefix_count: 0 });
  });

  it("a budget is written back and read as given; 0 is not a budget", async () => {
    const patched = await call("PATCH", `/v1/modules/${A.id}`, { max_stale_hours: null });
    expect(patched.json().max_stale_hours).toBeNull();
    expect((await call("PATCH", `/v1/modules/${A.id}`, { max_stale_hours: "tenant" })).json().max_stale_hours).toBe("tenant");
    expect((await call("PATCH", `/v1/modules/${A.id}`, { max_stale_hours: 0 })).statusCode).toBe(400);
    expect((await call("GET", `/v1/modules/${A.id}`)).json().max_stale_hours).toBe("tenant");
  });
});
