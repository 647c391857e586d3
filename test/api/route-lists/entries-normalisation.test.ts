import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../../helpers/controller.js";
import { auditOf, createModule, expectStatus } from "./helpers.js";

let t: TestController;
let asModule: string;
let domainModule: string;
let rangeModule: string;

beforeAll(async () => {
  t = await startTestController();
  asModule = (await createModule(t, t.rootKey, { name: "as", type: "AS_PREFIXES" })).id;
  domainModule = (await createModule(t, t.rootKey, { name: "domains", type: "DOMAINS" })).id;
  rangeModule = (await createModule(t, t.rootKey, { name: "ranges", type: "IP_RANGES" })).id;
});
afterAll(async () => t?.close());

const add = (module: string, path: string, payload: unknown) => ({ method: "POST" as const, url: `/v1/modules/${module}/${path}`, payload: payload as object });

async function created(module: string, path: string, payload: unknown) {
  return (await expectStatus(t, t.rootKey, add(module, path, payload), 201)).json();
}

async function refused(module: string, path: string, payload: unknown, status = 400) {
  const res = await expectStatus(t, t.rootKey, add(module, path, payload), status);
  return res.json() as { code: string; detail: string; errors?: { path: string; message: string }[] };
}

describe("AS entries", () => {
  it("as - stores an ASN given as a number or as AS/as text", async () => {
    expect((await created(asModule, "as-entries", { asn: 13335 })).asn).toBe(13335);
    expect((await created(asModule, "as-entries", { asn: "AS15169" })).asn).toBe(15169);
    expect((await created(asModule, "as-entries", { asn: "as32934", comment: "meta" })).asn).toBe(32934);
    expect((await created(asModule, "as-entries", { asn: "4294967295" })).asn).toBe(4294967295);
    expect((await created(asModule, "as-entries", { asn: 1 })).asn).toBe(1);
  });

  it("as - the same ASN twice in a module is a 409, whatever its spelling", async () => {
    await created(asModule, "as-entries", { asn: 64500 });
    expect((await refused(asModule, "as-entries", { asn: "AS64500" }, 409)).code).toBe("conflict");
  });

  it("as - refuses 0, 2^32, fractions, negative and non-ASN text", async () => {
    for (const asn of [0, 4294967296, 1.5, -1, "AS0", "AS4294967296", "ASN1", "13335x", "", "A S1", null, true]) {
      const body = await refused(asModule, "as-entries", { asn });
      expect(body.code).toBe("validation_failed");
    }
  });

  it("as - a prefix member is refused, naming it as removed", async () => {
    const body = await refused(asModule, "as-entries", { asn: 64501, prefix: "1.1.1.0/24" });
    expect(body.errors).toContainEqual({ path: "body.prefix", message: expect.stringContaining("prefix was removed") });
    const entry = await created(asModule, "as-entries", { asn: 64502 });
    await expectStatus(t, t.rootKey, { method: "PATCH", url: `/v1/modules/${asModule}/as-entries/${entry.id}`, payload: { prefix: "1.1.1.0/24" } }, 400);
  });
});

describe("domain entries", () => {
  const cases: [string, string][] = [
    ["Example.COM", "example.com"],
    ["trailing.example.", "trailing.example"],
    ["bücher.example", "xn--bcher-kva.example"],
    ["BÜCHER.de", "xn--bcher-kva.de"],
    ["例え.テスト", "xn--r8jz45g.xn--zckzah"],
    ["xn--nxasmq6b.example", "xn--nxasmq6b.example"],
    ["a-b.c-d.example", "a-b.c-d.example"],
    [`${"a".repeat(63)}.example`, `${"a".repeat(63)}.example`],
    ["1.2.3.example", "1.2.3.example"],
    ["sub.ｅｘａｍｐｌｅ.org", "sub.example.org"],
  ];
  for (const [input, stored] of cases) {
    it(`domain - ${JSON.stringify(input)} is stored as ${stored}`, async () => {
      const entry = await created(domainModule, "domain-entries", { domain: input });
      expect(entry).toMatchObject({ domain: stored, include_subdomains: false, comment: "" });
    });
  }

  it("domain - a name of exactly 253 characters is accepted, 254 is not", async () => {
    const label = "a".repeat(63);
    const name253 = `${label}.${label}.${label}.${"b".repeat(61)}`;
    expect(name253).toHaveLength(253);
    await created(domainModule, "domain-entries", { domain: name253 });
    await refused(domainModule, "domain-entries", { domain: `${label}.${label}.${label}.${"b".repeat(62)}` });
  });

  const bad = [
    "localhost",
    "example..com",
    ".example.com",
    "-a.example",
    "a-.example",
    `${"a".repeat(64)}.example`,
    "under_score.example",
    "space here.example",
    "a/b.example",
    "a%41.example",
    "user@example.com",
    "example.com:443",
    "1.2.3.4",
    "0x7f.1",
    "example.123",
    "*.example.com",
    "xn--zz.example",
    "",
    ".",
  ];
  for (const domain of bad) {
    it(`domain - refuses ${JSON.stringify(domain)}`, async () => {
      const body = await refused(domainModule, "domain-entries", { domain });
      expect(body.code).toBe("validation_failed");
      if (domain !== "") expect(body.errors?.[0]?.path).toBe("body.domain");
    });
  }

  it("domain - duplicates are judged after normalisation; include_subdomains is kept", async () => {
    const e = await created(domainModule, "domain-entries", { domain: "cdn.example.net", include_subdomains: true, comment: "all of it" });
    expect(e).toMatchObject({ include_subdomains: true, comment: "all of it" });
    await refused(domainModule, "domain-entries", { domain: "CDN.example.net." }, 409);
  });

  it("domain - PATCH renormalises and refuses a value another entry holds", async () => {
    const a = await created(domainModule, "domain-entries", { domain: "patch-a.example" });
    await created(domainModule, "domain-entries", { domain: "patch-b.example" });
    const url = `/v1/modules/${domainModule}/domain-entries/${a.id}`;
    let res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { domain: "Patch-C.Example.", include_subdomains: true } }, 200);
    expect(res.json()).toMatchObject({ domain: "patch-c.example", include_subdomains: true });
    res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { domain: "patch-b.example" } }, 409);
    res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { domain: "bad_name.example" } }, 400);
    res = await expectStatus(t, t.rootKey, { method: "GET", url }, 200);
    expect(res.json().domain).toBe("patch-c.example");
  });
});

describe("IP-range entries", () => {
  const cases: [string, string][] = [
    ["10.0.0.0/8", "10.0.0.0/8"],
    ["192.0.2.1", "192.0.2.1/32"],
    ["2001:DB8::/32", "2001:db8::/32"],
    ["2001:0db8:0000:0000:0000:0000:0000:0001", "2001:db8::1/128"],
    ["2001:db8:0:0:1:0:0:0/80", "2001:db8:0:0:1::/80"],
    ["2001:db8:0:1:0:0:0:0/64", "2001:db8:0:1::/64"],
    ["2001:0:0:1:0:0:0:1", "2001:0:0:1::1/128"],
    ["2001:db8:1:0:1:0:1:0/128", "2001:db8:1:0:1:0:1:0/128"],
    ["::ffff:1.2.3.4", "::ffff:1.2.3.4/128"],
    ["::FFFF:0102:0305/128", "::ffff:1.2.3.5/128"],
    ["::ffff:0:0/96", "::ffff:0.0.0.0/96"],
    ["0.0.0.0/0", "0.0.0.0/0"],
    ["::/0", "::/0"],
    [" 198.51.100.0/24 ", "198.51.100.0/24"],
  ];
  for (const [input, stored] of cases) {
    it(`ip_range - ${JSON.stringify(input)} is stored as ${stored}`, async () => {
      expect((await created(rangeModule, "ip-range-entries", { cidr: input })).cidr).toBe(stored);
    });
  }

  it("ip_range - host bits set is a 400 that names the network", async () => {
    for (const [input, network] of [
      ["10.0.0.1/8", "10.0.0.0/8"],
      ["2001:db8::1/32", "2001:db8::/32"],
      ["1.2.3.4/0", "0.0.0.0/0"],
      ["::1/0", "::/0"],
      ["::ffff:1.2.3.4/96", "::ffff:0.0.0.0/96"],
    ]) {
      const body = await refused(rangeModule, "ip-range-entries", { cidr: input });
      expect(body.detail).toContain(network);
      expect(body.errors).toEqual([{ path: "body.cidr", message: expect.stringContaining(`did you mean ${network}`) }]);
    }
  });

  it("ip_range - refuses what is not a CIDR", async () => {
    for (const cidr of [
      "10.0.0.0/33",
      "::/129",
      "10.0.0.0/08",
      "10.0.0.0/",
      "01.2.3.4",
      "1.2.3",
      "256.1.1.1",
      "fe80::1%eth0",
      "example.com",
      "10.0.0.0/8/8",
      "1.2.3.4 /32",
      "::g",
    ]) {
      const body = await refused(rangeModule, "ip-range-entries", { cidr });
      expect(body.errors?.[0]?.path, cidr).toBe("body.cidr");
    }
  });

  it("ip_range - duplicates are judged on the canonical form", async () => {
    await created(rangeModule, "ip-range-entries", { cidr: "2001:db8:aaaa::/48" });
    await refused(rangeModule, "ip-range-entries", { cidr: "2001:DB8:AAAA:0::/48" }, 409);
    await created(rangeModule, "ip-range-entries", { cidr: "203.0.113.7" });
    await refused(rangeModule, "ip-range-entries", { cidr: "203.0.113.7/32" }, 409);
  });
});

describe("entries - shared rules", () => {
  it("entries - adding to a module of the wrong type is a 400", async () => {
    expect((await refused(domainModule, "as-entries", { asn: 13335 })).detail).toContain("AS_PREFIXES");
    await refused(asModule, "domain-entries", { domain: "example.com" });
    await refused(asModule, "ip-range-entries", { cidr: "10.0.0.0/8" });
    await refused(rangeModule, "as-entries", { asn: 13335 });
  });

  it("entries - comments are 0..256 characters; unknown members are refused", async () => {
    await created(rangeModule, "ip-range-entries", { cidr: "172.16.0.0/12", comment: "c".repeat(256) });
    await refused(rangeModule, "ip-range-entries", { cidr: "172.17.0.0/16", comment: "c".repeat(257) });
    await refused(rangeModule, "ip-range-entries", { cidr: "172.18.0.0/16", note: "x" });
    await refused(domainModule, "domain-entries", { domain: "x.example", include_subdomains: "yes" });
  });

  it("entries - text PostgreSQL cannot store and crafted cursors are 400s, never 500s", async () => {
    await refused(rangeModule, "ip-range-entries", { cidr: "172.19.0.0/16", comment: "nul\u0000inside" });
    await refused(domainModule, "domain-entries", { domain: "nul\u0000.example" });
    await refused(asModule, "as-entries", { asn: "AS1\u0000" });
    const crafted = Buffer.from('["not-a-uuid"]').toString("base64url");
    for (const path of ["as-entries", "domain-entries", "ip-range-entries", "cdn-sources"]) {
      const res = await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${rangeModule}/${path}?cursor=${crafted}` }, 400);
      expect(res.json().code).toBe("invalid_cursor");
    }
  });

  it("entries - item routes read, update and delete; another module's entry is a 404", async () => {
    const e = await created(rangeModule, "ip-range-entries", { cidr: "100.64.0.0/10", comment: "cgnat" });
    const url = `/v1/modules/${rangeModule}/ip-range-entries/${e.id}`;
    expect((await expectStatus(t, t.rootKey, { method: "GET", url }, 200)).json()).toEqual(e);
    const other = await createModule(t, t.rootKey, { name: "ranges-2", type: "IP_RANGES" });
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${other.id}/ip-range-entries/${e.id}` }, 404);
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${rangeModule}/as-entries/${e.id}` }, 404);
    const res = await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { comment: "shared space" } }, 200);
    expect(res.json()).toMatchObject({ cidr: "100.64.0.0/10", comment: "shared space" });
    await expectStatus(t, t.rootKey, { method: "PATCH", url, payload: { cidr: "100.64.0.1/10" } }, 400);
    await expectStatus(t, t.rootKey, { method: "DELETE", url }, 204);
    await expectStatus(t, t.rootKey, { method: "GET", url }, 404);
    await expectStatus(t, t.rootKey, { method: "DELETE", url }, 404);
  });

  it("entries - lists page newest first, and a module of another tenant or none is a 404", async () => {
    const m = await createModule(t, t.rootKey, { name: "as-pages", type: "AS_PREFIXES" });
    for (let asn = 65001; asn <= 65005; asn++) await created(m.id, "as-entries", { asn });
    const seen: number[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/v1/modules/${m.id}/as-entries?limit=2${cursor ? `&cursor=${cursor}` : ""}`;
      const page: any = (await expectStatus(t, t.rootKey, { method: "GET", url }, 200)).json();
      seen.push(...page.items.map((e: { asn: number }) => e.asn));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual([65005, 65004, 65003, 65002, 65001]);
    await expectStatus(t, t.rootKey, { method: "GET", url: "/v1/modules/01900000-0000-7000-8000-000000000000/as-entries" }, 404);
    await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${m.id}/as-entries?limit=501` }, 400);
  });

  it("entries - every write is audited with its resource type", async () => {
    const e = await created(asModule, "as-entries", { asn: 64999, comment: "audit me" });
    await expectStatus(t, t.rootKey, { method: "PATCH", url: `/v1/modules/${asModule}/as-entries/${e.id}`, payload: { comment: "audited" } }, 200);
    await expectStatus(t, t.rootKey, { method: "DELETE", url: `/v1/modules/${asModule}/as-entries/${e.id}` }, 204);
    const records = (await auditOf(t, "as_entry")).filter((r) => r.resource_id === e.id);
    expect(records.map((r) => r.action)).toEqual(["delete", "update", "create"]);
    expect(records[1].changes).toEqual({ comment: { from: "audit me", to: "audited" } });
    expect(records[2].summary).toBe("AS64999 added to module as");
    const d = await created(domainModule, "domain-entries", { domain: "audited.example" });
    expect((await auditOf(t, "domain_entry")).some((r) => r.resource_id === d.id)).toBe(true);
    const r = await created(rangeModule, "ip-range-entries", { cidr: "192.0.2.0/24" });
    expect((await auditOf(t, "ip_range_entry")).some((x) => x.resource_id === r.id)).toBe(true);
  });
});
