import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { auditOf, createModule, expectStatus } from "./route-lists/helpers.js";

let t: TestController;
let countries: string;
let ranges: string;

beforeAll(async () => {
  t = await startTestController();
  countries = (await createModule(t, t.rootKey, { name: "by-country", type: "COUNTRY" })).id;
  ranges = (await createModule(t, t.rootKey, { name: "ranges", type: "IP_RANGES" })).id;
});
afterAll(async () => t?.close());

const url = (module: string, rest = "") => `/v1/modules/${module}/country-entries${rest}`;

describe("country entries", () => {
  let nl: { id: string };

  it("stores an ISO 3166-1 alpha-2 code upper case, and lists, reads, updates and deletes it like the other entry kinds", async () => {
    nl = (await expectStatus(t, t.rootKey, { method: "POST", url: url(countries), payload: { country: " nl ", comment: "Netherlands" } }, 201)).json();
    expect(nl).toMatchObject({ module_id: countries, country: "NL", comment: "Netherlands" });
    await expectStatus(t, t.rootKey, { method: "POST", url: url(countries), payload: { country: "DE" } }, 201);
    const list = (await expectStatus(t, t.rootKey, { method: "GET", url: url(countries) }, 200)).json();
    expect(list.items.map((e: { country: string }) => e.country)).toEqual(["DE", "NL"]);
    expect((await expectStatus(t, t.rootKey, { method: "GET", url: url(countries, `/${nl.id}`) }, 200)).json()).toEqual(nl);
    const updated = (await expectStatus(t, t.rootKey, { method: "PATCH", url: url(countries, `/${nl.id}`), payload: { country: "be" } }, 200)).json();
    expect(updated).toMatchObject({ id: nl.id, country: "BE", comment: "Netherlands" });
    await expectStatus(t, t.rootKey, { method: "POST", url: url(countries), payload: { country: "BE" } }, 409);
    const audit = await auditOf(t, "country_entry");
    expect(audit.map((a: { summary: string }) => a.summary)).toContain("BE in module by-country updated");
  });

  it("refuses anything but an assigned two-letter code with a 400 that says so, and other module types", async () => {
    for (const country of ["NLD", "N1", "XX", "", "🇳🇱"]) {
      const res = await expectStatus(t, t.rootKey, { method: "POST", url: url(countries), payload: { country } }, 400);
      expect(res.headers["content-type"]).toMatch(/^application\/problem\+json/);
    }
    const res = await expectStatus(t, t.rootKey, { method: "POST", url: url(countries), payload: { country: "QQ" } }, 400);
    expect(res.json().detail).toMatch(/not an assigned ISO 3166-1 alpha-2 country code/);
    await expectStatus(t, t.rootKey, { method: "POST", url: url(ranges), payload: { country: "NL" } }, 400);
    await expectStatus(t, t.rootKey, { method: "POST", url: `/v1/modules/${countries}/ip-range-entries`, payload: { cidr: "192.0.2.0/24" } }, 400);
  });

  it("exports and imports CSV (country,comment), normalising rows and refusing bad ones as a whole", async () => {
    const csv = (body: string, query = "") =>
      t.call(t.rootKey, { method: "POST", url: `/v1/modules/${countries}/entries.csv${query}`, payload: body, headers: { "content-type": "text/csv" } });
    const bad = await csv("country,comment\r\nfr,France\r\nFRA,no\r\n");
    expect(bad.statusCode, bad.body).toBe(400);
    expect(bad.json().errors).toEqual([expect.objectContaining({ line: 3, value: "FRA" })]);
    const ok = await csv("country,comment\r\nfr,France\r\nde,\r\n", "?mode=replace");
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ created: 1, updated: 0, deleted: 1, unchanged: 1 });
    const out = await expectStatus(t, t.rootKey, { method: "GET", url: `/v1/modules/${countries}/entries.csv` }, 200);
    expect(out.body).toBe("country,comment\r\nDE,\r\nFR,France\r\n");
    await expectStatus(t, t.rootKey, { method: "DELETE", url: url(countries, `/${nl.id}`) }, 404);
  });

  it("the catalog lists a module's countries", async () => {
    const catalog = (await expectStatus(t, t.rootKey, { method: "GET", url: "/v1/router-lists/catalog" }, 200)).json();
    const m = catalog.modules.find((x: { id: string }) => x.id === countries);
    expect(m.type).toBe("COUNTRY");
    expect(m.entries.countries.map((e: { country: string }) => e.country)).toEqual(["DE", "FR"]);
    expect(catalog.modules.find((x: { id: string }) => x.id === ranges).entries.countries).toEqual([]);
  });
});
