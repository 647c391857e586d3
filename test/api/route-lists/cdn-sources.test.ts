import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { manualClock, startTestController, type TestController } from "../../helpers/controller.js";
import { auditOf, createModule, expectStatus, type FeedServer, mintKey, startFeedServer } from "./helpers.js";

const fixtures = join(import.meta.dirname, "../../../packages/controller/src/sources/fixtures");
const fixture = (name: string) => readFileSync(join(fixtures, name));

let t: TestController;
let feeds: FeedServer;
let moduleId: string;
// The preview limit is 10 calls a minute per tenant: each test starts a fresh minute.
const clock = manualClock();

const many = Array.from({ length: 150 }, (_, i) => `10.${Math.floor(i / 256)}.${i % 256}.0/24`).join("\n");
const garbage = Array.from({ length: 30 }, (_, i) => `junk-${i}`).join("\n");

beforeAll(async () => {
  feeds = await startFeedServer({
    "/list.txt": { body: fixture("text-list.txt") },
    "/aws.json": { type: "application/json", body: fixture("aws-ip-ranges.json") },
    "/goog.json": { type: "application/json", body: fixture("google-goog.json") },
    "/cloudflare.json": { type: "application/json", body: fixture("cloudflare-ips.json") },
    "/fastly.json": { type: "application/json", body: fixture("fastly-public-ip-list.json") },
    "/empty.txt": { body: "# nothing here\n\n" },
    "/many.txt": { body: `${many}\n${garbage}\n` },
    "/gzip.txt": { body: gzipSync("192.0.2.0/24\n2001:db8::/32\n"), headers: { "content-encoding": "gzip" } },
    "/not-json.json": { type: "application/json", body: "{ nope" },
    "/to-private": { status: 302, body: "", headers: { location: "http://10.255.255.1/feed.txt" } },
    "/down": { status: 503, body: "maintenance" },
  });
  t = await startTestController({ env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" }, clock });
  moduleId = (await createModule(t, t.rootKey, { name: "cdn", type: "IP_RANGES" })).id;
});
afterAll(async () => {
  await t?.close();
  await feeds?.close();
});
beforeEach(() => clock.advance(61_000));

const sources = (module = moduleId) => `/v1/modules/${module}/cdn-sources`;
const preview = (payload: unknown, module = moduleId) => ({ method: "POST" as const, url: `${sources(module)}/preview`, payload: payload as object });

describe("CDN sources - CRUD", () => {
  it("cdn - adds a text source with defaults, on every module type", async () => {
    for (const type of ["AS_PREFIXES", "DOMAINS", "IP_RANGES"]) {
      const m = await createModule(t, t.rootKey, { name: `cdn-on-${type}`, type });
      const res = await expectStatus(t, t.rootKey, { method: "POST", url: sources(m.id), payload: { url: `${feeds.url}/list.txt` } }, 201);
      expect(res.json()).toEqual({
        id: expect.any(String),
        module_id: m.id,
        url: `${feeds.url}/list.txt`,
        format: "text",
        json_path: null,
        enabled: true,
        allow_empty: false,
        last_refreshed_at: null,
        last_error: null,
        last_prefix_count: null,
        created_at: expect.any(String),
        updated_at: expect.any(String),
      });
      expect(res.headers.location).toBe(`${sources(m.id)}/${res.json().id}`);
    }
  });

  it("cdn - json needs a valid json_path; text takes none", async () => {
    const add = (payload: unknown) => t.call(t.rootKey, { method: "POST", url: sources(), payload: payload as object });
    expect((await add({ url: "https://feeds.example.com/a.json", format: "json" })).statusCode).toBe(400);
    const bad = await add({ url: "https://feeds.example.com/a.json", format: "json", json_path: "prefixes[*]?service" });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0]).toMatchObject({ path: "body.json_path", message: expect.stringContaining("position") });
    expect((await add({ url: "https://feeds.example.com/a.txt", json_path: "a.b" })).statusCode).toBe(400);
    expect((await add({ url: "https://feeds.example.com/a.json", format: "json", json_path: "a\u0000b" })).statusCode).toBe(400);
    const ok = await add({
      url: "https://feeds.example.com/a.json",
      format: "json",
      json_path: "prefixes[*]?service=CLOUDFRONT.ip_prefix",
      allow_empty: true,
      enabled: false,
    });
    expect(ok.statusCode).toBe(201);
    expect(ok.json()).toMatchObject({ format: "json", json_path: "prefixes[*]?service=CLOUDFRONT.ip_prefix", allow_empty: true, enabled: false });
  });

  it("cdn - the URL form is checked when saved: 400 for schemes, credentials and refused literal addresses", async () => {
    for (const url of [
      "ftp://feeds.example.com/a.txt",
      "file:///etc/passwd",
      "gopher://feeds.example.com/",
      "https://user:pw@feeds.example.com/a.txt",
      "http://169.254.169.254/latest/meta-data/",
      "http://10.0.0.1/feed.txt",
      "http://[::1]/feed.txt",
      "http://[::ffff:192.168.1.1]/feed.txt",
      "http://0x0a000001/feed.txt",
      "not a url",
    ]) {
      const res = await expectStatus(t, t.rootKey, { method: "POST", url: sources(), payload: { url } }, 400);
      expect(res.json().errors[0].path, url).toBe("body.url");
    }
  });

  it("cdn - one URL twice is a 409 unless the path differs (AWS v4 and v6)", async () => {
    const base = { url: `${feeds.url}/aws.json`, format: "json" };
    await expectStatus(t, t.rootKey, { method: "POST", url: sources(), payload: { ...base, json_path: "prefixes[*].ip_prefix" } }, 201);
    await expectStatus(t, t.rootKey, { method: "POST", url: sources(), payload: { ...base, json_path: "ipv6_prefixes[*].ipv6_prefix" } }, 201);
    await expectStatus(t, t.rootKey, { method: "POST", url: sources(), payload: { ...base, json_path: "prefixes[*].ip_prefix" } }, 409);
  });

  it("cdn - update, switch to text (the path goes), delete; another module's source is a 404", async () => {
    const s = (
      await expectStatus(
        t,
        t.rootKey,
        { method: "POST", url: sources(), payload: { url: `${feeds.url}/fastly.json`, format: "json", json_path: "addresses" } },
        201,
      )
    ).json();
    const url = `${sources()}/${s.id}`;
    let res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { enabled: false, allow_empty: true } }, 200);
    expect(res.json()).toMatchObject({ enabled: false, allow_empty: true, json_path: "addresses" });
    res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { format: "text" } }, 200);
    expect(res.json()).toMatchObject({ format: "text", json_path: null });
    await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { format: "json" } }, 400);
    await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { url: "http://192.168.0.1/" } }, 400);
    const other = await createModule(t, t.rootKey, { name: "cdn-other", type: "IP_RANGES" });
    await expectStatus(t, t.rootKey, { method: "GET", url: `${sources(other.id)}/${s.id}` }, 404);
    const list = (await expectStatus(t, t.rootKey, { method: "GET", url: sources() }, 200)).json();
    expect(list.items.map((x: { id: string }) => x.id)).toContain(s.id);
    await expectStatus(t, t.rootKey, { method: "DELETE", url }, 204);
    await expectStatus(t, t.rootKey, { method: "GET", url }, 404);
    const actions = (await auditOf(t, "cdn_source")).filter((r) => r.resource_id === s.id).map((r) => r.action);
    expect(actions).toEqual(["delete", "update", "update", "create"]);
  });
});

describe("CDN sources - preview", () => {
  it("preview - a text feed: comments, blanks, masked host bits, rejected lines, distinct prefixes", async () => {
    const res = await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/list.txt` }), 200);
    const body = res.json();
    expect(body).toMatchObject({
      url: `${feeds.url}/list.txt`,
      fetched_bytes: fixture("text-list.txt").length,
      prefix_count_v4: 4,
      prefix_count_v6: 2,
      masked: 2,
      rejected: 6,
    });
    expect(body.duration_ms).toBeGreaterThanOrEqual(0);
    expect(body.sample).toEqual(["198.51.100.0/24", "203.0.113.5/32", "192.0.2.0/25", "2001:db8::/48", "2001:db8::1/128", "10.0.0.0/8"]);
    expect(body.rejected_sample.map((r: { value: string }) => r.value)).toEqual([
      "not-an-ip",
      "300.1.2.3/24",
      "10.0.0.0/33",
      "2001:db8::/129",
      "1.2.3.4 5.6.7.8",
      "010.0.0.1",
    ]);
    expect(body.rejected_sample[0]).toEqual({ value: "not-an-ip", reason: expect.any(String) });
  });

  it("preview - real-shaped JSON feeds through json_path", async () => {
    const cases: [string, string, number, number][] = [
      ["/aws.json", "prefixes[*].ip_prefix", 7, 0],
      ["/aws.json", "prefixes[*]?service=CLOUDFRONT.ip_prefix", 3, 0],
      ["/aws.json", "ipv6_prefixes[*]?service=CLOUDFRONT.ipv6_prefix", 0, 2],
      ["/aws.json", "prefixes[0].ip_prefix", 1, 0],
      ["/goog.json", "prefixes[*].ipv4Prefix", 4, 0],
      ["/goog.json", "prefixes[*].ipv6Prefix", 0, 3],
      ["/cloudflare.json", "result.ipv4_cidrs", 6, 0],
      ["/cloudflare.json", "result.ipv6_cidrs", 0, 4],
      ["/fastly.json", "addresses", 5, 0],
      ["/fastly.json", "ipv6_addresses", 0, 2],
    ];
    for (const [path, json_path, v4, v6] of cases) {
      clock.advance(61_000);
      const body = (await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}${path}`, format: "json", json_path }), 200)).json();
      expect([body.prefix_count_v4, body.prefix_count_v6, body.rejected], `${path} ${json_path}`).toEqual([v4, v6, 0]);
    }
  });

  it("preview - an empty feed is a 200 with zero counts; gzip is accepted", async () => {
    const empty = (await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/empty.txt` }), 200)).json();
    expect(empty).toMatchObject({ prefix_count_v4: 0, prefix_count_v6: 0, masked: 0, rejected: 0, sample: [], rejected_sample: [] });
    const gz = (await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/gzip.txt` }), 200)).json();
    expect(gz).toMatchObject({ prefix_count_v4: 1, prefix_count_v6: 1, sample: ["192.0.2.0/24", "2001:db8::/32"] });
  });

  it("preview - the sample holds the first 100 prefixes and the first 20 rejected values", async () => {
    const body = (await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/many.txt` }), 200)).json();
    expect(body.prefix_count_v4).toBe(150);
    expect(body.sample).toHaveLength(100);
    expect(body.sample[0]).toBe("10.0.0.0/24");
    expect(body.rejected).toBe(30);
    expect(body.rejected_sample).toHaveLength(20);
    expect(body.rejected_sample[19].value).toBe("junk-19");
  });

  it("preview - a URL refused by the policy is a 422 outbound_refused, by form or on a redirect", async () => {
    for (const url of ["http://169.254.169.254/latest/", "http://[::1]/x", "http://192.168.1.1/x", "http://0xa9fea9fe/x", `${feeds.url}/to-private`]) {
      const res = await expectStatus(t, t.rootKey, preview({ url }), 422);
      expect(res.json().code).toBe("outbound_refused");
      expect(res.headers["content-type"]).toContain("application/problem+json");
    }
    expect(feeds.requests).toContain("GET /to-private");
  });

  it("preview - schemes and credentials are refused without a fetch (422); a non-URL is a 400", async () => {
    for (const url of ["file:///etc/passwd", "gopher://127.0.0.1:70/", "https://u:p@feeds.example.com/"]) {
      expect((await expectStatus(t, t.rootKey, preview({ url }), 422)).json().code).toBe("outbound_refused");
    }
    await expectStatus(t, t.rootKey, preview({ url: "not a url" }), 400);
  });

  it("preview - a feed that fails otherwise is a 400 naming the outbound error", async () => {
    let res = await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/down` }), 400);
    expect(res.json()).toMatchObject({ code: "validation_failed", outbound_error: "outbound_http_status", http_status: 503 });
    res = await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/not-json.json`, format: "json", json_path: "a" }), 400);
    expect(res.json().outbound_error).toBe("feed_invalid_json");
    res = await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/aws.json`, format: "json" }), 400);
    expect(res.json().errors[0].path).toBe("body.json_path");
  });

  it("preview - a saved source previews with its own URL, format and path", async () => {
    const s = (
      await expectStatus(
        t,
        t.rootKey,
        { method: "POST", url: sources(), payload: { url: `${feeds.url}/goog.json`, format: "json", json_path: "prefixes[*].ipv6Prefix" } },
        201,
      )
    ).json();
    const res = await expectStatus(t, t.rootKey, { method: "POST", url: `${sources()}/${s.id}/preview` }, 200);
    expect(res.json()).toMatchObject({ url: `${feeds.url}/goog.json`, prefix_count_v4: 0, prefix_count_v6: 3 });
    await expectStatus(t, t.rootKey, { method: "POST", url: `${sources()}/${s.id}/preview`, payload: {} }, 200);
    await expectStatus(t, t.rootKey, { method: "POST", url: `${sources()}/${s.id}/preview`, payload: { url: "x" } }, 400);
    await expectStatus(t, t.rootKey, { method: "POST", url: `${sources()}/01900000-0000-7000-8000-000000000000/preview` }, 404);
    const other = await createModule(t, t.rootKey, { name: "preview-other", type: "DOMAINS" });
    await expectStatus(t, t.rootKey, { method: "POST", url: `${sources(other.id)}/${s.id}/preview` }, 404);
  });

  it("preview - saves nothing", async () => {
    const before = (await expectStatus(t, t.rootKey, { method: "GET", url: `${sources()}?limit=500` }, 200)).json().items.length;
    const audit = (await auditOf(t, "cdn_source")).length;
    await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/list.txt` }), 200);
    expect((await expectStatus(t, t.rootKey, { method: "GET", url: `${sources()}?limit=500` }, 200)).json().items.length).toBe(before);
    expect((await auditOf(t, "cdn_source")).length).toBe(audit);
  });

  it("preview - operator and above only", async () => {
    const viewer = await mintKey(t, "viewer");
    await expectStatus(t, viewer, preview({ url: `${feeds.url}/list.txt` }), 403);
    const operator = await mintKey(t, "operator");
    await expectStatus(t, operator, preview({ url: `${feeds.url}/list.txt` }), 200);
  });
});

describe("CDN sources - preview rate limit", () => {
  it("preview - 10 calls a minute per tenant, whatever their answer; the 11th is a 429 with Retry-After", async () => {
    const calls = [
      preview({ url: `${feeds.url}/list.txt` }),
      preview({ url: `${feeds.url}/down` }),
      preview({ url: "http://169.254.169.254/" }),
      preview({ url: `${feeds.url}/list.txt` }, "01900000-0000-7000-8000-000000000000"),
      { method: "POST" as const, url: `${sources()}/preview`, payload: "{ not json", headers: { "content-type": "application/json" } },
      preview({ url: `${feeds.url}/list.txt`, unknown: 1 }),
      preview({ url: `${feeds.url}/list.txt` }),
      preview({ url: `${feeds.url}/list.txt` }),
      preview({ url: `${feeds.url}/list.txt` }),
      preview({ url: `${feeds.url}/list.txt` }),
    ];
    const statuses: number[] = [];
    for (const call of calls) {
      statuses.push((await t.call(t.rootKey, call)).statusCode);
      clock.advance(1000);
    }
    expect(statuses).toEqual([200, 400, 422, 404, 400, 400, 200, 200, 200, 200]);
    const limited = await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/list.txt` }), 429);
    expect(limited.json().code).toBe("rate_limited");
    expect(limited.headers["retry-after"]).toBe("50");

    // A 429 does not count: the window slides as the first calls age out.
    clock.advance(40_000);
    expect((await t.call(t.rootKey, preview({ url: `${feeds.url}/list.txt` }))).headers["retry-after"]).toBe("10");
    clock.advance(10_000);
    await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/list.txt` }), 200);
    await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/list.txt` }), 429);
    clock.advance(1000);
    await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/list.txt` }), 200);
  });

  it("preview - the limit is per tenant", async () => {
    for (let i = 0; i < 10; i++) await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/empty.txt` }), 200);
    await expectStatus(t, t.rootKey, preview({ url: `${feeds.url}/empty.txt` }), 429);
    const res = await expectStatus(t, t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "preview-b" } }, 201);
    const other = res.json().admin_key.secret as string;
    const m = await createModule(t, other, { name: "b", type: "IP_RANGES" });
    await expectStatus(t, other, preview({ url: `${feeds.url}/empty.txt` }, m.id), 200);
  });
});
