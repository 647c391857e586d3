import { afterAll, beforeAll, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;
beforeAll(async () => {
  t = await startTestController({ env: { APP_CORS_ORIGINS: "https://noc.example, https://ops.example" } });
});
afterAll(async () => t?.close());

it("CORS allows the configured origins only", async () => {
  const ok = await t.call(null, {
    method: "OPTIONS",
    url: "/v1/api-keys",
    headers: { origin: "https://ops.example", "access-control-request-method": "POST" },
  });
  expect(ok.headers["access-control-allow-origin"]).toBe("https://ops.example");
  const no = await t.call(null, {
    method: "OPTIONS",
    url: "/v1/api-keys",
    headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
  });
  expect(no.headers["access-control-allow-origin"]).toBeUndefined();
});
