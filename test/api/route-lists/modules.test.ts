import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../../helpers/controller.js";
import { auditOf, createModule, expectStatus, mintKey, otherTenant } from "./helpers.js";

let t: TestController;

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

const post = (payload: unknown) => ({ method: "POST" as const, url: "/v1/modules", payload: payload as object });
const patch = (id: string, payload: unknown) => ({ method: "PATCH" as const, url: `/v1/modules/${id}`, payload: payload as object });

async function createProfile(key = t.rootKey): Promise<string> {
  const res = await expectStatus(t, key, { method: "POST", url: "/v1/doh-profiles", payload: { url: "https://dns.example.net/dns-query" } }, 201);
  return res.json().id;
}

describe("modules - create and read", () => {
  it("modules - creates with every default and answers Location", async () => {
    const res = await expectStatus(t, t.rootKey, post({ name: "streaming", type: "AS_PREFIXES" }), 201);
    const m = res.json();
    expect(res.headers.location).toBe(`/v1/modules/${m.id}`);
    expect(m).toEqual({
      id: expect.any(String),
      name: "streaming",
      type: "AS_PREFIXES",
      description: "",
      enabled: true,
      action: "announce",
      rpki_policy: "off",
      community_id: null,
      doh_profile_id: null,
      doh_profile_ids: [],
      doh_resolver_policy: { strategy: "failover", record_types: ["A", "AAAA"], timeout_ms: 3000, attempts: 2, keep_previous_minutes: 1440 },
      refresh_interval_minutes: null,
      max_stale_hours: "tenant",
      last_refreshed_at: null,
      last_refresh_error: null,
      snapshot: { prefix_count_v4: 0, prefix_count_v6: 0, collected_at: null },
      created_at: m.created_at,
      updated_at: m.created_at,
    });
    expect(m.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const read = await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${m.id}` }, 200);
    expect(read.json()).toEqual(m);
  });

  it("modules - a name is unique in the tenant (409) but not across tenants", async () => {
    await createModule(t, t.rootKey, { name: "dup", type: "IP_RANGES" });
    const res = await expectStatus(t, t.rootKey, post({ name: "dup", type: "DOMAINS" }), 409);
    expect(res.json().code).toBe("conflict");
    const other = await otherTenant(t, "modules-other");
    await createModule(t, other.key, { name: "dup", type: "DOMAINS" });
  });

  it("modules - refuses bad names, types, unknown members and read-only fields", async () => {
    for (const body of [
      { name: "", type: "DOMAINS" },
      { name: "x".repeat(65), type: "DOMAINS" },
      { name: "tab\there", type: "DOMAINS" },
      { name: "t", type: "ASN" },
      { name: "t" },
      { name: "t", type: "DOMAINS", colour: "red" },
      { name: "t", type: "DOMAINS", snapshot: { prefix_count_v4: 1 } },
      { name: "t", type: "DOMAINS", enabled: "yes" },
      { name: "t", type: "DOMAINS", community_id: "not-a-uuid" },
      { name: "t", type: "DOMAINS", description: "nul\u0000inside" },
    ]) {
      const res = await expectStatus(t, t.rootKey, post(body), 400);
      expect(res.json().code).toBe("validation_failed");
      expect(res.headers["content-type"]).toContain("application/problem+json");
    }
  });

  it("modules - refresh_interval_minutes is null or 5..10080", async () => {
    await expectStatus(t, t.rootKey, post({ name: "r4", type: "DOMAINS", refresh_interval_minutes: 4 }), 400);
    await expectStatus(t, t.rootKey, post({ name: "r10081", type: "DOMAINS", refresh_interval_minutes: 10081 }), 400);
    await expectStatus(t, t.rootKey, post({ name: "r2.5", type: "DOMAINS", refresh_interval_minutes: 7.5 }), 400);
    expect((await createModule(t, t.rootKey, { name: "r5", type: "DOMAINS", refresh_interval_minutes: 5 })).refresh_interval_minutes).toBe(5);
    const m = await createModule(t, t.rootKey, { name: "r10080", type: "DOMAINS", refresh_interval_minutes: 10080 });
    const res = await expectStatus(t, t.rootKey, patch(m.id, { refresh_interval_minutes: null }), 200);
    expect(res.json().refresh_interval_minutes).toBeNull();
  });

  it("modules - a viewer reads but cannot write", async () => {
    const viewer = await mintKey(t, "viewer");
    const m = await createModule(t, t.rootKey, { name: "viewer-visible", type: "DOMAINS" });
    await expectStatus(t, viewer, { method: "GET", url: `/v1/modules/${m.id}` }, 200);
    await expectStatus(t, viewer, post({ name: "nope", type: "DOMAINS" }), 403);
    await expectStatus(t, viewer, patch(m.id, { enabled: false }), 403);
    await expectStatus(t, viewer, { method: "DELETE", url: `/v1/modules/${m.id}` }, 403);
  });

  it("modules - an unknown or malformed id is a 404 or a 400", async () => {
    await expectStatus(t, t.rootKey, { method: "GET", url: "/v1/modules/01900000-0000-7000-8000-000000000000" }, 404);
    await expectStatus(t, t.rootKey, { method: "GET", url: "/v1/modules/nope" }, 400);
    await expectStatus(t, t.rootKey, patch("01900000-0000-7000-8000-000000000000", { enabled: false }), 404);
  });
});

describe("modules - type, community and DoH fields", () => {
  it("modules - type cannot change; sending the same type is accepted", async () => {
    const m = await createModule(t, t.rootKey, { name: "fixed-type", type: "IP_RANGES" });
    const res = await expectStatus(t, t.rootKey, patch(m.id, { type: "DOMAINS" }), 400);
    expect(res.json().errors[0].path).toBe("body.type");
    await expectStatus(t, t.rootKey, patch(m.id, { type: "IP_RANGES", description: "same type" }), 200);
  });

  it("modules - community_id must be a community of the tenant", async () => {
    const c = (await expectStatus(t, t.rootKey, { method: "POST", url: "/v1/communities", payload: { community: "65000:1" } }, 201)).json();
    const m = await createModule(t, t.rootKey, { name: "with-community", type: "AS_PREFIXES", community_id: c.id });
    expect(m.community_id).toBe(c.id);
    const res = await expectStatus(
      t,
      t.rootKey,
      post({ name: "bad-community", type: "AS_PREFIXES", community_id: "01900000-0000-7000-8000-000000000000" }),
      400,
    );
    expect(res.json().errors[0].path).toBe("body.community_id");
    const other = await otherTenant(t, "community-owner");
    const foreign = (await expectStatus(t, other.key, { method: "POST", url: "/v1/communities", payload: { community: "65000:2" } }, 201)).json();
    await expectStatus(t, t.rootKey, patch(m.id, { community_id: foreign.id }), 400);
    expect((await expectStatus(t, t.rootKey, patch(m.id, { community_id: null }), 200)).json().community_id).toBeNull();
  });

  it("modules - doh_profile_id and doh_profile_ids: write either, read both", async () => {
    const [p1, p2] = [await createProfile(), await createProfile()];
    const legacy = await createModule(t, t.rootKey, { name: "legacy-doh", type: "DOMAINS", doh_profile_id: p1 });
    expect(legacy).toMatchObject({ doh_profile_id: p1, doh_profile_ids: [p1] });
    const multi = await createModule(t, t.rootKey, { name: "multi-doh", type: "DOMAINS", doh_profile_ids: [p2, p1] });
    expect(multi).toMatchObject({ doh_profile_id: p2, doh_profile_ids: [p2, p1] });
    const both = await createModule(t, t.rootKey, { name: "both-doh", type: "DOMAINS", doh_profile_id: p1, doh_profile_ids: [p1] });
    expect(both.doh_profile_ids).toEqual([p1]);
    const nullSingle = await createModule(t, t.rootKey, { name: "null-single", type: "DOMAINS", doh_profile_id: null, doh_profile_ids: [p2] });
    expect(nullSingle.doh_profile_ids).toEqual([p2]);

    let res = await expectStatus(t, t.rootKey, post({ name: "conflict-doh", type: "DOMAINS", doh_profile_id: p1, doh_profile_ids: [p2] }), 400);
    expect(res.json().errors[0].path).toBe("body.doh_profile_id");
    await expectStatus(t, t.rootKey, post({ name: "conflict-doh2", type: "DOMAINS", doh_profile_id: p1, doh_profile_ids: [p1, p2] }), 400);
    res = await expectStatus(t, t.rootKey, post({ name: "unknown-doh", type: "DOMAINS", doh_profile_ids: ["01900000-0000-7000-8000-000000000000"] }), 400);
    expect(res.json().errors[0].path).toBe("body.doh_profile_ids");
    await expectStatus(t, t.rootKey, post({ name: "twice-doh", type: "DOMAINS", doh_profile_ids: [p1, p1] }), 400);

    res = await expectStatus(t, t.rootKey, patch(legacy.id, { doh_profile_id: p2 }), 200);
    expect(res.json()).toMatchObject({ doh_profile_id: p2, doh_profile_ids: [p2] });
    res = await expectStatus(t, t.rootKey, patch(legacy.id, { doh_profile_ids: [] }), 200);
    expect(res.json()).toMatchObject({ doh_profile_id: null, doh_profile_ids: [] });
    res = await expectStatus(t, t.rootKey, patch(multi.id, { description: "profiles stay" }), 200);
    expect(res.json().doh_profile_ids).toEqual([p2, p1]);
  });

  it("modules - DoH fields on a non-DOMAINS module are a 400, empty ones are fine", async () => {
    const p = await createProfile();
    for (const type of ["AS_PREFIXES", "IP_RANGES"]) {
      await expectStatus(t, t.rootKey, post({ name: `doh-on-${type}`, type, doh_profile_ids: [p] }), 400);
      await expectStatus(t, t.rootKey, post({ name: `doh1-on-${type}`, type, doh_profile_id: p }), 400);
      await expectStatus(t, t.rootKey, post({ name: `pol-on-${type}`, type, doh_resolver_policy: { attempts: 3 } }), 400);
      const m = await createModule(t, t.rootKey, { name: `empty-doh-${type}`, type, doh_profile_ids: [], doh_profile_id: null, doh_resolver_policy: null });
      await expectStatus(t, t.rootKey, patch(m.id, { doh_profile_ids: [p] }), 400);
      await expectStatus(t, t.rootKey, patch(m.id, { doh_profile_ids: [], doh_resolver_policy: {} }), 200);
    }
  });

  it("modules - doh_resolver_policy is validated, completed with defaults and merged on update", async () => {
    const m = await createModule(t, t.rootKey, { name: "policy", type: "DOMAINS", doh_resolver_policy: { strategy: "union", record_types: ["AAAA"] } });
    expect(m.doh_resolver_policy).toEqual({ strategy: "union", record_types: ["AAAA"], timeout_ms: 3000, attempts: 2, keep_previous_minutes: 1440 });
    for (const policy of [
      { strategy: "fastest" },
      { record_types: [] },
      { record_types: ["A", "A"] },
      { record_types: ["MX"] },
      { timeout_ms: 99 },
      { timeout_ms: 30001 },
      { attempts: 0 },
      { attempts: 6 },
      { keep_previous_minutes: -1 },
      { keep_previous_minutes: 43201 },
      { retries: 1 },
    ]) {
      const res = await expectStatus(t, t.rootKey, patch(m.id, { doh_resolver_policy: policy }), 400);
      expect(res.json().errors[0].path).toMatch(/^body\.doh_resolver_policy/);
    }
    let res = await expectStatus(t, t.rootKey, patch(m.id, { doh_resolver_policy: { timeout_ms: 100, attempts: 5, record_types: ["AAAA", "A"] } }), 200);
    expect(res.json().doh_resolver_policy).toEqual({
      strategy: "union",
      record_types: ["A", "AAAA"],
      timeout_ms: 100,
      attempts: 5,
      keep_previous_minutes: 1440,
    });
    res = await expectStatus(t, t.rootKey, patch(m.id, { doh_resolver_policy: { keep_previous_minutes: 0 } }), 200);
    expect(res.json().doh_resolver_policy.keep_previous_minutes).toBe(0);
    res = await expectStatus(t, t.rootKey, patch(m.id, { doh_resolver_policy: null }), 200);
    expect(res.json().doh_resolver_policy).toEqual({
      strategy: "failover",
      record_types: ["A", "AAAA"],
      timeout_ms: 3000,
      attempts: 2,
      keep_previous_minutes: 1440,
    });
  });
});

describe("modules - lists", () => {
  it("modules - filters by type, enabled and name, and refuses unknown parameters", async () => {
    const other = await otherTenant(t, "list-filters");
    const k = other.key;
    await createModule(t, k, { name: "Video-EU", type: "DOMAINS" });
    await createModule(t, k, { name: "video-us", type: "DOMAINS", enabled: false });
    await createModule(t, k, { name: "ranges", type: "IP_RANGES" });
    const names = async (query: string) =>
      (await expectStatus(t, k, { method: "GET", url: `/v1/modules${query}` }, 200)).json().items.map((m: { name: string }) => m.name);
    expect(await names("")).toEqual(["ranges", "video-us", "Video-EU"]);
    expect(await names("?type=DOMAINS")).toEqual(["video-us", "Video-EU"]);
    expect(await names("?enabled=false")).toEqual(["video-us"]);
    expect(await names("?enabled=true&type=DOMAINS")).toEqual(["Video-EU"]);
    expect(await names("?q=VIDEO")).toEqual(["video-us", "Video-EU"]);
    expect(await names("?q=%25")).toEqual([]);
    await expectStatus(t, k, { method: "GET", url: "/v1/modules?enabled=yes" }, 400);
    await expectStatus(t, k, { method: "GET", url: "/v1/modules?type=ASN" }, 400);
    await expectStatus(t, k, { method: "GET", url: "/v1/modules?colour=red" }, 400);
    await expectStatus(t, k, { method: "GET", url: "/v1/modules?limit=0" }, 400);
    const bad = await expectStatus(t, k, { method: "GET", url: "/v1/modules?cursor=nope" }, 400);
    expect(bad.json().code).toBe("invalid_cursor");
    // A cursor that decodes but carries no id never reaches SQL.
    const crafted = Buffer.from('["not-a-uuid"]').toString("base64url");
    expect((await expectStatus(t, k, { method: "GET", url: `/v1/modules?cursor=${crafted}` }, 400)).json().code).toBe("invalid_cursor");
    await expectStatus(t, k, { method: "GET", url: "/v1/modules?q=a%00b" }, 400);
  });

  it("modules - pages without repeats or gaps", async () => {
    const other = await otherTenant(t, "list-pages");
    for (let i = 0; i < 7; i++) await createModule(t, other.key, { name: `m${i}`, type: "IP_RANGES" });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/v1/modules?limit=3${cursor ? `&cursor=${cursor}` : ""}`;
      const page: any = (await expectStatus(t, other.key, { method: "GET", url }, 200)).json();
      seen.push(...page.items.map((m: { name: string }) => m.name));
      expect(page.has_more).toBe(page.next_cursor !== null);
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(["m6", "m5", "m4", "m3", "m2", "m1", "m0"]);
  });
});

describe("modules - update, delete, audit, idempotency", () => {
  it("modules - an update that changes nothing writes no audit record", async () => {
    const m = await createModule(t, t.rootKey, { name: "quiet", type: "DOMAINS", description: "d" });
    const before = (await auditOf(t, "module")).length;
    const res = await expectStatus(t, t.rootKey, patch(m.id, { description: "d", enabled: true }), 200);
    expect(res.json().updated_at).toBe(m.updated_at);
    expect((await auditOf(t, "module")).length).toBe(before);
    await expectStatus(t, t.rootKey, patch(m.id, { description: "e" }), 200);
    const [last] = await auditOf(t, "module");
    expect(last).toMatchObject({ action: "update", resource_id: m.id, changes: { description: { from: "d", to: "e" } } });
  });

  it("modules - renaming onto a taken name is a 409", async () => {
    await createModule(t, t.rootKey, { name: "taken-name", type: "DOMAINS" });
    const m = await createModule(t, t.rootKey, { name: "free-name", type: "DOMAINS" });
    await expectStatus(t, t.rootKey, patch(m.id, { name: "taken-name" }), 409);
    expect((await expectStatus(t, t.rootKey, patch(m.id, { name: "  renamed  " }), 200)).json().name).toBe("renamed");
  });

  it("modules - delete removes entries and sources with the module, and is audited", async () => {
    const m = await createModule(t, t.rootKey, { name: "doomed", type: "IP_RANGES" });
    const entry = await expectStatus(t, t.rootKey, { method: "POST", url: `/v1/modules/${m.id}/ip-range-entries`, payload: { cidr: "10.1.0.0/16" } }, 201);
    await expectStatus(t, t.rootKey, { method: "POST", url: `/v1/modules/${m.id}/cdn-sources`, payload: { url: "https://feeds.example.com/a.txt" } }, 201);
    await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/modules/${m.id}` }, 204);
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${m.id}` }, 404);
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${m.id}/ip-range-entries/${entry.json().id}` }, 404);
    const [row] = await t.controller.db.sql`SELECT (SELECT count(*) FROM ip_range_entries WHERE module_id = ${m.id})::int AS e,
                                    (SELECT count(*) FROM cdn_sources WHERE module_id = ${m.id})::int AS s`;
    expect(row).toEqual({ e: 0, s: 0 });
    const [last] = await auditOf(t, "module");
    expect(last).toMatchObject({ action: "delete", resource_id: m.id, severity: "warning" });
    expect(last.summary).toContain("1 entries and 1 CDN sources");
    await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/modules/${m.id}` }, 404);
  });

  it("modules - an Idempotency-Key replays the create instead of making a second module", async () => {
    const opts = { ...post({ name: "once", type: "DOMAINS" }), headers: { "idempotency-key": "create-once-1" } };
    const first = await expectStatus(t, t.rootKey, opts, 201);
    const again = await expectStatus(t, t.rootKey, opts, 201);
    expect(again.headers["idempotent-replayed"]).toBe("true");
    expect(again.json().id).toBe(first.json().id);
    const other = await t.call(t.rootKey, { ...opts, payload: { name: "twice", type: "DOMAINS" } });
    expect(other.statusCode).toBe(422);
  });

  it("modules - create, update and delete are audited with their changes", async () => {
    const m = await createModule(t, t.rootKey, { name: "audited", type: "AS_PREFIXES" });
    const records = (await auditOf(t, "module")).filter((r) => r.resource_id === m.id);
    expect(records).toHaveLength(1);
    expect(records[0]).toMatchObject({ action: "create", changes: { name: { from: null, to: "audited" }, type: { from: null, to: "AS_PREFIXES" } } });
  });
});
