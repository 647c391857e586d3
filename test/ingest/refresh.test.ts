import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRevisionStore } from "../../packages/controller/src/services/revisions/revision-store.js";
import { createLookupService } from "../../packages/controller/src/services/route-lists/lookup.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { startFeedServer } from "../helpers/feeds.js";

let t: TestController;
let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let key: string;

const post = async (url: string, payload?: unknown) => {
  const res = await t.call(key, { method: "POST", url, ...(payload === undefined ? {} : { payload: payload as object }) });
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
const community = async (value: string, title: string) => (await post("/v1/communities", { community: value, title })).id as string;
const module = async (name: string, type: string, communityId: string | null) =>
  (await post("/v1/modules", { name, type, community_id: communityId })).id as string;
const prefixesOf = async (revisionId: number) =>
  (await t.call(key, { method: "GET", url: `/v1/revisions/${revisionId}/prefixes?limit=500` })).json().items.map((p: any) => [p.prefix, p.communities]);
const refreshAll = (body: object = {}) => t.call(key, { method: "POST", url: "/v1/modules/refresh?wait=true", payload: body });

beforeAll(async () => {
  feeds = await startFeedServer();
  t = await startTestController({ env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8", ASN_SOURCE: "ripestat", ASN_SOURCE_URL: feeds.base } });
  key = t.rootKey;
});
afterAll(async () => {
  await t?.close();
  await feeds?.close();
});

describe("refresh and revisions", () => {
  let X: string;
  let Y: string;
  let A: string;
  let B: string;
  let firstRevision: number;

  it("two modules sharing a prefix give one announcement with both communities; a more-specific carries both", async () => {
    X = await community("65000:100", "via-vpn");
    Y = await community("65000:200", "via-uplink-2");
    A = await module("a-ranges", "IP_RANGES", X);
    B = await module("b-ranges", "IP_RANGES", Y);
    await post(`/v1/modules/${A}/ip-range-entries`, { cidr: "11.0.0.0/23" });
    await post(`/v1/modules/${A}/ip-range-entries`, { cidr: "12.0.0.0/24" });
    await post(`/v1/modules/${B}/ip-range-entries`, { cidr: "11.0.1.0/24" });
    await post(`/v1/modules/${B}/ip-range-entries`, { cidr: "12.0.0.0/24" });
    await post(`/v1/modules/${B}/ip-range-entries`, { cidr: "10.1.0.0/16" }); // RFC 1918: dropped as a bogon
    const res = await t.call(key, { method: "POST", url: `/v1/modules/${A}/refresh?wait=true` });
    expect(res.statusCode, res.body).toBe(200);
    const job = res.json();
    expect(job).toMatchObject({ type: "module_ingest", status: "succeeded", result: { unchanged: false } });
    firstRevision = job.result.revision_id;
    expect(await prefixesOf(firstRevision)).toEqual([
      ["11.0.0.0/23", ["65000:100"]],
      ["11.0.1.0/24", ["65000:100", "65000:200"]],
      ["12.0.0.0/24", ["65000:100", "65000:200"]],
    ]);
    const rev = (await t.call(key, { method: "GET", url: `/v1/revisions/${firstRevision}` })).json();
    expect(rev).toMatchObject({ reason: "ingest", is_current: true, prefix_count_v4: 3, prefix_count_v6: 0, input_prefix_count: 4, dropped_prefix_count: 1 });
    expect(rev.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const byModule = (await t.call(key, { method: "GET", url: `/v1/revisions/${firstRevision}/prefixes?module_id=${B}` }))
      .json()
      .items.map((p: any) => p.prefix);
    expect(byModule).toEqual(["11.0.1.0/24", "12.0.0.0/24"]);
    const ofA = (await t.call(key, { method: "GET", url: `/v1/revisions/${firstRevision}/prefixes?module_id=${A}` })).json().items.map((p: any) => p.prefix);
    expect(ofA).toEqual(["11.0.0.0/23", "11.0.1.0/24", "12.0.0.0/24"]);
    const all = (await t.call(key, { method: "GET", url: `/v1/revisions/${firstRevision}/prefixes` })).json().items;
    expect(all.map((p: any) => p.module_ids)).toEqual([[A], [A, B].sort(), [A, B].sort()]);
    // One snapshot row per source: each IP-range entry is its own origin, the bogon stays in B's snapshot.
    const rows = await t.controller.db.sql<{ module_id: string; source: string; prefixes: string[] }[]>`
      SELECT module_id, source, prefixes FROM snapshots WHERE module_id IN (${A}, ${B}) ORDER BY module_id, prefixes[1]`;
    expect(rows.map((r) => [r.module_id, r.source, r.prefixes])).toEqual(
      [
        [A, "ip_range", ["11.0.0.0/23"]],
        [A, "ip_range", ["12.0.0.0/24"]],
        [B, "ip_range", ["10.1.0.0/16"]],
        [B, "ip_range", ["11.0.1.0/24"]],
        [B, "ip_range", ["12.0.0.0/24"]],
      ].sort((x, y) => (x[0]! < y[0]! ? -1 : x[0]! > y[0]! ? 1 : 0)),
    );
  });

  it("a refresh that changes nothing makes no new revision", async () => {
    const res = await refreshAll();
    expect(res.json().result).toMatchObject({ unchanged: true, revision_id: firstRevision });
    expect((await t.call(key, { method: "GET", url: "/v1/revisions" })).json().items).toHaveLength(1);
    expect((await t.call(key, { method: "GET", url: "/v1/router-lists/catalog" })).json().current_revision_id).toBe(firstRevision);
  });

  let C: string;
  it("collects CDN feeds (text and JSON) and ASN prefixes from RIPEstat; a failing source keeps its last good records", async () => {
    feeds.text("/cf.txt", ["# Cloudflare", "104.16.0.0/13", "", "2606:4700::/32", "garbage"]);
    feeds.json("/aws.json", {
      prefixes: [
        { ip_prefix: "52.94.0.0/22", service: "AMAZON" },
        { ip_prefix: "3.5.140.0/22", service: "S3" },
      ],
    });
    feeds.ripestat(13335, ["1.1.1.0/24", "1.0.0.0/24", "2606:4700:4700::/48"]);
    C = await module("cdn-and-asn", "AS_PREFIXES", X);
    await post(`/v1/modules/${C}/as-entries`, { asn: "AS13335" });
    const text = await post(`/v1/modules/${C}/cdn-sources`, { url: `${feeds.base}/cf.txt`, format: "text" });
    await post(`/v1/modules/${C}/cdn-sources`, { url: `${feeds.base}/aws.json`, format: "json", json_path: "prefixes[*]?service=S3.ip_prefix" });
    const res = await t.call(key, { method: "POST", url: `/v1/modules/${C}/refresh?wait=true` });
    expect(res.statusCode, res.body).toBe(200);
    const result = res.json().result;
    expect(result.modules).toEqual([{ module_id: C, prefix_count: 6, sources_ok: 3, sources_failed: 0, sources_stale: 0 }]);
    const prefixes = (await prefixesOf(result.revision_id)).map((p: any) => p[0]);
    expect(prefixes).toEqual(expect.arrayContaining(["1.0.0.0/24", "1.1.1.0/24", "3.5.140.0/22", "104.16.0.0/13", "2606:4700::/32"]));
    expect(prefixes).not.toContain("52.94.0.0/22");
    expect(prefixes).not.toContain("2606:4700:4700::/48"); // inside 2606:4700::/32 with the same community
    const snapshotOf = async () =>
      (
        await t.controller.db.sql<{ source: string; origin: string; prefixes: string[]; seen_at: null }[]>`
        SELECT source, origin, prefixes, seen_at FROM snapshots WHERE module_id = ${C} ORDER BY source, origin`
      ).map((r) => ({ ...r }));
    const rows = await snapshotOf();
    expect(rows).toEqual(
      expect.arrayContaining([
        { source: "asn", origin: "13335", prefixes: ["1.0.0.0/24", "1.1.1.0/24", "2606:4700:4700::/48"], seen_at: null },
        { source: "cdn", origin: text.id, prefixes: ["104.16.0.0/13", "2606:4700::/32"], seen_at: null },
        { source: "cdn", origin: expect.any(String), prefixes: ["3.5.140.0/22"], seen_at: null },
      ]),
    );
    expect(rows).toHaveLength(3);

    // The text feed breaks: the job succeeds with a warning and the feed's prefixes stay.
    feeds.routes.set("/cf.txt", { status: 503, body: "down" });
    const again = await t.call(key, { method: "POST", url: `/v1/modules/${C}/refresh?wait=true` });
    expect(again.json().result.warnings).toEqual([expect.objectContaining({ module_id: C, source: `cdn:${text.id}` })]);
    expect(again.json().result.unchanged).toBe(true);
    const source = (await t.call(key, { method: "GET", url: `/v1/modules/${C}/cdn-sources/${text.id}` })).json();
    expect(source.last_error).toBeTruthy();
    expect(source.last_prefix_count).toBe(2);
    expect(await snapshotOf()).toEqual(rows); // the failed feed's row is kept as it was
  });

  it("an upstream list that comes back empty trips the guard and withdraws nothing", async () => {
    const D = await module("big-feed", "IP_RANGES", Y);
    feeds.text(
      "/big.txt",
      Array.from({ length: 40 }, (_, i) => `20.${i * 2}.0.0/16`),
    ); // no two are siblings: 40 announcements
    const src = await post(`/v1/modules/${D}/cdn-sources`, { url: `${feeds.base}/big.txt`, format: "text", allow_empty: true });
    const first = await t.call(key, { method: "POST", url: `/v1/modules/${D}/refresh?wait=true` });
    expect(first.statusCode, first.body).toBe(200);
    const before = first.json().result.revision_id;
    feeds.text("/big.txt", ["# nothing today"]);
    const tripped = await t.call(key, { method: "POST", url: `/v1/modules/${D}/refresh?wait=true` });
    expect(tripped.statusCode).toBe(422);
    expect(tripped.json()).toMatchObject({ code: "revision_guard_tripped", job_id: expect.any(String) });
    const current = (await t.call(key, { method: "GET", url: "/v1/revisions?limit=1" })).json().items[0];
    expect(current.revision_id).toBe(before);
    const kept = (await t.call(key, { method: "GET", url: `/v1/modules/${D}` })).json();
    expect(kept.snapshot.prefix_count_v4).toBe(40);
    expect((await t.call(key, { method: "GET", url: `/v1/modules/${D}/cdn-sources/${src.id}` })).json().last_prefix_count).toBe(40);

    const forced = await t.call(key, { method: "POST", url: `/v1/modules/${D}/refresh?wait=true`, payload: { force: true } });
    expect(forced.statusCode).toBe(200);
    expect(forced.json().result.revision_id).toBe(before + 1);
  });

  it("without allow_empty an empty feed is a failed source that keeps its prefixes", async () => {
    const E = await module("strict-feed", "IP_RANGES", null);
    feeds.text("/strict.txt", ["30.0.0.0/8"]);
    await post(`/v1/modules/${E}/cdn-sources`, { url: `${feeds.base}/strict.txt`, format: "text" });
    await t.call(key, { method: "POST", url: `/v1/modules/${E}/refresh?wait=true` });
    feeds.text("/strict.txt", []);
    const res = await t.call(key, { method: "POST", url: `/v1/modules/${E}/refresh?wait=true` });
    expect(res.json().result.warnings[0].message).toBe("empty");
    expect(res.json().result.unchanged).toBe(true);
  });

  it("diff, rollback and lookup answer from the revisions", async () => {
    const list = (await t.call(key, { method: "GET", url: "/v1/revisions?limit=500" })).json().items;
    const newest = list[0].revision_id as number;
    const diff = (await t.call(key, { method: "GET", url: `/v1/revisions/${firstRevision}/diff/${newest}` })).json();
    expect(diff.removed_count).toBe(0);
    expect(diff.added_count).toBeGreaterThan(0);
    expect(diff.truncated).toBe(false);

    const rolled = await t.call(key, { method: "POST", url: `/v1/revisions/${firstRevision}/rollback` });
    expect(rolled.statusCode).toBe(201);
    expect(rolled.json()).toMatchObject({ reason: "rollback", rolled_back_from: firstRevision, revision_id: newest + 1, is_current: true });
    expect(await prefixesOf(newest + 1)).toEqual(await prefixesOf(firstRevision));

    const look = (await t.call(key, { method: "GET", url: "/v1/lookup?q=11.0.1.7" })).json();
    expect(look).toMatchObject({
      kind: "ip",
      matched: true,
      revision: { revision_id: newest + 1, prefix: "11.0.1.0/24", communities: ["65000:100", "65000:200"] },
    });
    expect(
      look.matches
        .filter((m: any) => m.layer === "entry")
        .map((m: any) => m.value)
        .sort(),
    ).toEqual(["11.0.0.0/23", "11.0.1.0/24"]);
    expect(
      look.matches
        .filter((m: any) => m.layer === "snapshot")
        .map((m: any) => m.community)
        .sort(),
    ).toEqual(["65000:100", "65000:200"]);
    const asnHit = (await t.call(key, { method: "GET", url: "/v1/lookup?q=1.1.1.1" })).json();
    expect(asnHit.matches).toEqual([
      expect.objectContaining({ layer: "snapshot", source: "asn", origin: "13335", prefix: "1.1.1.0/24", community_title: "via-vpn" }),
    ]);
    expect((await t.call(key, { method: "GET", url: "/v1/lookup?q=1.2.3" })).statusCode).toBe(400);
    const preview = (await t.call(key, { method: "GET", url: `/v1/revisions/${firstRevision}/preview` })).json();
    expect(preview.by_community).toEqual([
      { community: "65000:100", title: "via-vpn", prefix_count: 3 },
      { community: "65000:200", title: "via-uplink-2", prefix_count: 2 },
    ]);
    expect(preview.bird_config_excerpt).toContain("11.0.0.0/23");
  });

  it("an IP lookup answers from memory: no query within a second of the last check, one small query after", async () => {
    const tenantId = (await t.call(key, { method: "GET", url: "/v1/auth/session" })).json().tenant_id;
    let now = 1_000_000;
    let queries = 0;
    const sql = t.controller.db.sql;
    const counting = new Proxy(sql, {
      apply(target, self, args) {
        queries++;
        return Reflect.apply(target as never, self, args);
      },
    });
    const service = createLookupService({ sql: counting as never, revisions: createRevisionStore(), now: () => now });
    const lookup = (q: string) => service.lookup(tenantId, q);
    expect(await lookup("11.0.1.7")).toMatchObject({ matched: true, revision: { prefix: "11.0.1.0/24", communities: ["65000:100", "65000:200"] } });
    queries = 0;
    expect((await lookup("1.1.1.1")).matches).toEqual([expect.objectContaining({ layer: "snapshot", origin: "13335" })]);
    expect(queries).toBe(0);
    now += 1000;
    await lookup("1.1.1.1");
    expect(queries).toBe(1);

    await post(`/v1/modules/${A}/ip-range-entries`, { cidr: "70.0.0.0/8" });
    queries = 0;
    now += 499;
    expect((await lookup("70.1.2.3")).matched).toBe(false); // still within the second
    expect(queries).toBe(0);
    now += 500;
    // Past half the second, the view still answers while it is checked in the background...
    expect((await lookup("70.1.2.3")).matched).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(queries).toBe(3); // the version, then modules and entries, which changed
    // ...and the next lookup has the new entry without a query of its own.
    expect((await lookup("70.1.2.3")).matches).toEqual([expect.objectContaining({ layer: "entry", module_id: A, value: "70.0.0.0/8" })]);
    expect(queries).toBe(3);
  });

  it("the lookup route sees a change within a second", async () => {
    await t.call(key, { method: "GET", url: "/v1/lookup?q=71.0.0.1" });
    await post(`/v1/modules/${B}/ip-range-entries`, { cidr: "71.0.0.0/8" });
    await new Promise((r) => setTimeout(r, 1100));
    const look = (await t.call(key, { method: "GET", url: "/v1/lookup?q=71.0.0.1" })).json();
    expect(look.matches).toEqual([expect.objectContaining({ layer: "entry", module_id: B, value: "71.0.0.0/8", community: "65000:200" })]);
  });

  it("cancelling a running refresh leaves no revision", async () => {
    const F = await module("stalled", "IP_RANGES", X);
    feeds.routes.set("/stall.txt", "hang");
    await post(`/v1/modules/${F}/ip-range-entries`, { cidr: "40.0.0.0/8" });
    await post(`/v1/modules/${F}/cdn-sources`, { url: `${feeds.base}/stall.txt`, format: "text" });
    const before = (await t.call(key, { method: "GET", url: "/v1/revisions?limit=1" })).json().items[0].revision_id;
    const accepted = await t.call(key, { method: "POST", url: `/v1/modules/${F}/refresh` });
    expect(accepted.statusCode).toBe(202);
    expect(accepted.headers.location).toBe(`/v1/jobs/${accepted.json().job_id}`);
    const jobId = accepted.json().job_id;
    for (let i = 0; i < 100 && (feeds.hits.get("/stall.txt") ?? 0) === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await t.call(key, { method: "POST", url: `/v1/jobs/${jobId}/cancel` })).json().cancel_requested).toBe(true);
    let job: any;
    for (let i = 0; i < 200; i++) {
      job = (await t.call(key, { method: "GET", url: `/v1/jobs/${jobId}` })).json();
      if (job.status !== "running") break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(job.status).toBe("cancelled");
    expect((await t.call(key, { method: "GET", url: "/v1/revisions?limit=1" })).json().items[0].revision_id).toBe(before);
    expect((await t.call(key, { method: "GET", url: `/v1/modules/${F}` })).json().snapshot.prefix_count_v4).toBe(0);
  });
});

describe("refresh requests", () => {
  it("are audited: who asked for which module's refresh, under the job they queued", async () => {
    const mod = (await t.call(key, { method: "POST", url: "/v1/modules", payload: { name: "audited-refresh", type: "IP_RANGES" } })).json();
    const one = await t.call(key, { method: "POST", url: `/v1/modules/${mod.id}/refresh` });
    expect(one.statusCode, one.body).toBe(202);
    const all = await t.call(key, { method: "POST", url: "/v1/modules/refresh", payload: { force: true } });
    expect(all.statusCode, all.body).toBe(202);
    const records = (await t.call(key, { method: "GET", url: "/v1/audit?resource_type=job&action=run" })).json().items;
    const of = (jobId: string) => records.find((r: { resource_id: string }) => r.resource_id === jobId);
    expect(of(one.json().job_id)).toMatchObject({ action: "run", resource_type: "job", summary: expect.stringContaining(`of module ${mod.id}`) });
    expect(of(all.json().job_id)).toMatchObject({ summary: expect.stringContaining("of every enabled module requested (force)") });
  });
});
