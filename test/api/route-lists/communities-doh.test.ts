import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../../helpers/controller.js";
import { auditOf, createModule, expectStatus } from "./helpers.js";

let t: TestController;

beforeAll(async () => {
  // 127.0.0.0/8 and one private /32 are allowed, so plain http may reach them.
  t = await startTestController({ env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8, 10.9.9.9/32" } });
});
afterAll(async () => t?.close());

const community = (payload: unknown) => ({ method: "POST" as const, url: "/v1/communities", payload: payload as object });
const profile = (payload: unknown) => ({ method: "POST" as const, url: "/v1/doh-profiles", payload: payload as object });

describe("communities", () => {
  it("communities - standard and large values are stored canonical", async () => {
    for (const [input, stored] of [
      ["65000:100", "65000:100"],
      ["065001:0100", "65001:100"],
      ["0:0", "0:0"],
      ["65535:65535", "65535:65535"],
      ["4200000000:1:2", "4200000000:1:2"],
      ["4294967295:4294967295:4294967295", "4294967295:4294967295:4294967295"],
      ["00064512:000:0007", "64512:0:7"],
      [" 65002:1 ", "65002:1"],
    ]) {
      const res = await expectStatus(t, t.rootKey, community({ community: input, title: `t ${stored}` }), 201);
      expect(res.json()).toMatchObject({ community: stored, title: `t ${stored}`, description: "" });
      expect(res.headers.location).toBe(`/v1/communities/${res.json().id}`);
    }
  });

  it("communities - refuses out-of-range and malformed values", async () => {
    await expectStatus(t, t.rootKey, community({ community: "65000:7", title: "nul\u0000" }), 400);
    const crafted = Buffer.from('["x"]').toString("base64url");
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/communities?cursor=${crafted}` }, 400);
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/doh-profiles?cursor=${crafted}` }, 400);
    for (const value of ["65536:1", "1:65536", "4294967296:1:1", "1:2:3:4", "1", "a:b", "-1:5", "1.5:2", "", "1::2", "1:\u00002"]) {
      const res = await expectStatus(t, t.rootKey, community({ community: value }), 400);
      expect(res.json().code).toBe("validation_failed");
    }
    const res = await expectStatus(t, t.rootKey, community({ community: "4200000000:1" }), 400);
    expect(res.json().detail).toContain("large community");
  });

  it("communities - a value is unique after canonicalisation (409)", async () => {
    await expectStatus(t, t.rootKey, community({ community: "65100:1" }), 201);
    await expectStatus(t, t.rootKey, community({ community: "065100:01" }), 409);
    const other = (await expectStatus(t, t.rootKey, community({ community: "65100:2" }), 201)).json();
    await expectStatus(t, t.rootKey, { method: "PATCH", url: `/v1/communities/${other.id}`, payload: { community: "65100:001" } }, 409);
  });

  it("communities - read, update, list, filter and delete", async () => {
    const c = (await expectStatus(t, t.rootKey, community({ community: "65200:1", title: "Video", description: "d" }), 201)).json();
    const url = `/v1/communities/${c.id}`;
    expect((await expectStatus(t, t.rootKey, { method: "GET", url }, 200)).json()).toEqual(c);
    const res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { title: "Streaming video", community: "65200:01" } }, 200);
    expect(res.json()).toMatchObject({ community: "65200:1", title: "Streaming video", description: "d" });
    const found = (await expectStatus(t, t.rootKey, { method: "GET", url: "/v1/communities?q=streaming" }, 200)).json();
    expect(found.items.map((x: { id: string }) => x.id)).toEqual([c.id]);
    await expectStatus(t, t.rootKey, { method: "DELETE", url }, 204);
    await expectStatus(t, t.rootKey, { method: "GET", url }, 404);
    const actions = (await auditOf(t, "community")).filter((r) => r.resource_id === c.id).map((r) => r.action);
    expect(actions).toEqual(["delete", "update", "create"]);
  });

  it("communities - deleting one in use is a 409 naming the modules", async () => {
    const c = (await expectStatus(t, t.rootKey, community({ community: "65300:1" }), 201)).json();
    const a = await createModule(t, t.rootKey, { name: "uses-community-a", type: "IP_RANGES", community_id: c.id });
    await createModule(t, t.rootKey, { name: "uses-community-b", type: "DOMAINS", community_id: c.id });
    const res = await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/communities/${c.id}` }, 409);
    expect(res.json().detail).toContain("uses-community-a, uses-community-b");
    expect(res.json().modules.map((m: { name: string }) => m.name)).toEqual(["uses-community-a", "uses-community-b"]);
    await expectStatus(t, t.rootKey, { method: "PATCH", url: `/v1/modules/${a.id}`, payload: { community_id: null } }, 200);
    await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/modules/${res.json().modules[1].id}` }, 204);
    await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/communities/${c.id}` }, 204);
  });
});

describe("DoH profiles", () => {
  it("doh - creates with defaults and stores the URL normalised", async () => {
    const res = await expectStatus(t, t.rootKey, profile({ url: "https://Cloudflare-DNS.com/dns-query" }), 201);
    expect(res.json()).toEqual({
      id: expect.any(String),
      name: null,
      url: "https://cloudflare-dns.com/dns-query",
      method: "GET",
      format: "wire",
      timeout_ms: 3000,
      headers: {},
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
  });

  it("doh - wire GET/POST and json GET, with headers and a name", async () => {
    const wirePost = await expectStatus(t, t.rootKey, profile({ name: "quad9", url: "https://dns.quad9.net/dns-query", method: "POST", timeout_ms: 100 }), 201);
    expect(wirePost.json()).toMatchObject({ name: "quad9", method: "POST", format: "wire", timeout_ms: 100 });
    const json = await expectStatus(
      t,
      t.rootKey,
      profile({ name: "google-json", url: "https://dns.google/resolve", format: "json", headers: { "X-Api-Key": "k" }, timeout_ms: 30000 }),
      201,
    );
    // Header values often are API tokens: every read masks them.
    expect(json.json()).toMatchObject({ format: "json", method: "GET", headers: { "X-Api-Key": "********" } });
  });

  it("doh - plain http only to an address inside APP_OUTBOUND_ALLOW_CIDRS", async () => {
    await expectStatus(t, t.rootKey, profile({ url: "http://127.0.0.1:8053/dns-query" }), 201);
    await expectStatus(t, t.rootKey, profile({ url: "http://10.9.9.9/dns-query" }), 201);
    for (const url of ["http://dns.example.net/dns-query", "http://8.8.8.8/dns-query", "http://10.9.9.8/dns-query"]) {
      const res = await expectStatus(t, t.rootKey, profile({ url }), 400);
      expect(res.json().errors[0].path).toBe("body.url");
    }
  });

  it("doh - refuses other schemes, credentials, refused literal addresses and bad fields", async () => {
    for (const body of [
      { url: "ftp://dns.example.net/" },
      { url: "https://user:pw@dns.example.net/dns-query" },
      { url: "https://169.254.169.254/dns-query" },
      { url: "https://[::ffff:10.0.0.1]/dns-query" },
      { url: "not a url" },
      { url: "https://dns.example.net/", method: "PUT" },
      { url: "https://dns.example.net/", format: "json", method: "POST" },
      { url: "https://dns.example.net/", format: "xml" },
      { url: "https://dns.example.net/", timeout_ms: 99 },
      { url: "https://dns.example.net/", timeout_ms: 30001 },
      { url: "https://dns.example.net/", headers: { "bad header": "x" } },
      { url: "https://dns.example.net/", headers: { "X-A": "line\r\nbreak" } },
      { url: "https://dns.example.net/", headers: { Host: "other" } },
      { url: "https://dns.example.net/", headers: { "X-A": 1 } },
      { url: "https://dns.example.net/", secret: "x" },
      { url: "https://dns.example.net/", name: "nul\u0000" },
    ]) {
      const res = await t.call(t.rootKey, profile(body));
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
  });

  it("doh - a name is unique when given", async () => {
    await expectStatus(t, t.rootKey, profile({ name: "primary", url: "https://a.example/dns-query" }), 201);
    await expectStatus(t, t.rootKey, profile({ name: "primary", url: "https://b.example/dns-query" }), 409);
    await expectStatus(t, t.rootKey, profile({ url: "https://c.example/dns-query" }), 201);
    await expectStatus(t, t.rootKey, profile({ url: "https://d.example/dns-query" }), 201);
  });

  it("doh - update validates the result and records no header value", async () => {
    const p = (
      await expectStatus(t, t.rootKey, profile({ name: "upd", url: "https://e.example/dns-query", headers: { Authorization: "Bearer one" } }), 201)
    ).json();
    const url = `/v1/doh-profiles/${p.id}`;
    await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { format: "json", method: "POST" } }, 400);
    await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { url: "http://dns.example.org/" } }, 400);
    const res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { headers: { Authorization: "Bearer two" }, timeout_ms: 5000 } }, 200);
    expect(res.json()).toMatchObject({ headers: { Authorization: "********" }, timeout_ms: 5000 });
    const [last] = (await auditOf(t, "doh_profile")).filter((r) => r.resource_id === p.id);
    expect(last.changes).toEqual({ timeout_ms: { from: 3000, to: 5000 }, headers: { from: "[not recorded]", to: "[not recorded]" } });
    expect(JSON.stringify(await auditOf(t, "doh_profile"))).not.toContain("Bearer");
  });

  it("doh - deleting one in use is a 409 naming the modules", async () => {
    const p = (await expectStatus(t, t.rootKey, profile({ url: "https://f.example/dns-query" }), 201)).json();
    const m = await createModule(t, t.rootKey, { name: "resolves-with-f", type: "DOMAINS", doh_profile_id: p.id });
    const res = await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/doh-profiles/${p.id}` }, 409);
    expect(res.json().detail).toContain("resolves-with-f");
    expect(res.json().modules).toEqual([{ id: m.id, name: "resolves-with-f" }]);
    await expectStatus(t, t.rootKey, { method: "PATCH", url: `/v1/modules/${m.id}`, payload: { doh_profile_id: null } }, 200);
    await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/doh-profiles/${p.id}` }, 204);
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/doh-profiles/${p.id}` }, 404);
  });

  it("doh - the list pages newest first", async () => {
    const page = (await expectStatus(t, t.rootKey, { method: "GET", url: "/v1/doh-profiles?limit=2" }, 200)).json();
    expect(page.items).toHaveLength(2);
    expect(page.has_more).toBe(true);
    const next = (await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/doh-profiles?limit=2&cursor=${page.next_cursor}` }, 200)).json();
    expect(next.items[0].id < page.items[1].id).toBe(true);
  });
});
