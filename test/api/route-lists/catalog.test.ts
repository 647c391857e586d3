import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../../helpers/controller.js";
import { createModule, expectStatus, mintKey, otherTenant } from "./helpers.js";

let t: TestController;

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("catalog", () => {
  it("catalog - an empty tenant has an empty catalog", async () => {
    const other = await otherTenant(t, "empty-catalog");
    const res = await expectStatus(t, other.key, { method: "GET", url: "/v1/router-lists/catalog" }, 200);
    expect(res.json()).toEqual({ modules: [], communities: [], doh_profiles: [], current_revision_id: null });
  });

  it("catalog - holds every module with its community, entries and sources, and nothing of other tenants", async () => {
    const post = async (url: string, payload: object) => (await expectStatus(t, t.rootKey, { method: "POST", url, payload }, 201)).json();
    const community = await post("/v1/communities", { community: "65000:10", title: "Streaming" });
    const profile = await post("/v1/doh-profiles", { name: "cf", url: "https://cloudflare-dns.com/dns-query" });
    const asns = await createModule(t, t.rootKey, { name: "b-asns", type: "AS_PREFIXES", community_id: community.id });
    const domains = await createModule(t, t.rootKey, { name: "a-domains", type: "DOMAINS", doh_profile_id: profile.id });
    const ranges = await createModule(t, t.rootKey, { name: "c-ranges", type: "IP_RANGES", enabled: false });
    for (const asn of [15169, 13335]) await post(`/v1/modules/${asns.id}/as-entries`, { asn });
    await post(`/v1/modules/${domains.id}/domain-entries`, { domain: "video.example", include_subdomains: true });
    await post(`/v1/modules/${ranges.id}/ip-range-entries`, { cidr: "2001:db8::/32" });
    await post(`/v1/modules/${ranges.id}/ip-range-entries`, { cidr: "192.0.2.0/24" });
    const source = await post(`/v1/modules/${ranges.id}/cdn-sources`, { url: "https://feeds.example.com/list.txt" });

    const other = await otherTenant(t, "catalog-other");
    await createModule(t, other.key, { name: "theirs", type: "DOMAINS" });

    const viewer = await mintKey(t, "viewer");
    const catalog = (await expectStatus(t, viewer, { method: "GET", url: "/v1/router-lists/catalog" }, 200)).json();
    expect(catalog.current_revision_id).toBeNull();
    expect(catalog.modules.map((m: { name: string }) => m.name)).toEqual(["a-domains", "b-asns", "c-ranges"]);
    const [d, a, r] = catalog.modules;
    const module = (await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${a.id}` }, 200)).json();
    expect(a).toMatchObject({ ...module, community });
    expect(a.entries.asns.map((e: { asn: number }) => e.asn)).toEqual([13335, 15169]);
    expect(a.entries.domains).toEqual([]);
    expect(d).toMatchObject({ community: null, doh_profile_ids: [profile.id], cdn_sources: [] });
    expect(d.entries.domains).toEqual([expect.objectContaining({ domain: "video.example", include_subdomains: true, module_id: domains.id })]);
    expect(r.enabled).toBe(false);
    expect(r.entries.ip_ranges.map((e: { cidr: string }) => e.cidr)).toEqual(["192.0.2.0/24", "2001:db8::/32"]);
    expect(r.cdn_sources).toEqual([source]);
    expect(catalog.communities).toEqual([community]);
    expect(catalog.doh_profiles).toEqual([profile]);
  });

  it("catalog - needs a key and refuses query parameters", async () => {
    await expectStatus(t, "", { method: "GET", url: "/v1/router-lists/catalog" }, 401);
    await expectStatus(t, t.rootKey, { method: "GET", url: "/v1/router-lists/catalog?limit=5" }, 400);
  });
});
