import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// GET /v1/lookup checks its usual query (one `q` of a valid length) by hand, on its hot path, and
// leaves everything else to the zod schema: these answers must be those of the schema.
let t: TestController;
const get = (url: string) => t.call(t.rootKey, { method: "GET", url });

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => {
  await t?.close();
});

describe("GET /v1/lookup's query", () => {
  it("takes a q of up to 260 characters", async () => {
    // The service trims q: 251 spaces and an address are 260 characters, and a valid query.
    for (const q of ["192.0.2.1", `${" ".repeat(251)}192.0.2.1`]) {
      const res = await get(`/v1/lookup?q=${encodeURIComponent(q)}`);
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ query: q, normalized: "192.0.2.1" });
    }
  });

  it("refuses a missing, empty or too long q, and any other parameter, as the schema does (400 validation_failed on the member)", async () => {
    const cases: [string, string][] = [
      ["/v1/lookup", "query.q"],
      ["/v1/lookup?q=", "query.q"],
      [`/v1/lookup?q=${"a".repeat(261)}`, "query.q"],
      ["/v1/lookup?q=192.0.2.1&limit=5", "query"],
      ["/v1/lookup?q=192.0.2.1&q=192.0.2.2", "query.q"],
    ];
    for (const [url, path] of cases) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(400);
      expect(res.json()).toMatchObject({ code: "validation_failed", errors: [expect.objectContaining({ path })] });
    }
  });
});
