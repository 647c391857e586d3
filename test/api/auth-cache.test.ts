import { afterAll, beforeAll, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, startController } from "../../packages/controller/src/controller.js";
import { startTestController, type TestController } from "../helpers/controller.js";

let a: TestController;
let b: Controller;
beforeAll(async () => {
  a = await startTestController();
  b = await startController(loadConfig({ DATABASE_URL: a.db.url, LOG_LEVEL: "silent", APP_SERVICE: "api" }), { logger: false });
});
afterAll(async () => {
  await b?.close();
  await a?.close();
});

it("a key revoked through one replica is refused by another within a second", async () => {
  const key = (await a.call(a.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: "shared", role: "viewer" } })).json();
  const onB = () => b.app.inject({ method: "GET", url: "/v1/auth/session", headers: { authorization: `Bearer ${key.secret}` } });
  expect((await onB()).statusCode).toBe(200);
  expect((await a.call(a.rootKey, { method: "DELETE", url: `/v1/api-keys/${key.id}` })).statusCode).toBe(204);
  expect((await a.call(key.secret, { method: "GET", url: "/v1/auth/session" })).statusCode).toBe(401); // same replica: at once
  await new Promise((r) => setTimeout(r, 1100));
  expect((await onB()).statusCode).toBe(401);
});
