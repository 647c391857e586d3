import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// One speaker, one identity: a new enrollment token retires the ones issued before it, and a new
// enrollment retires the node keys of the earlier ones.

let t: TestController;
const call = (key: string | null, method: "GET" | "POST", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });
const enrollWith = (token: string) => call(token, "POST", "/v1/nodes/enroll", { hostname: "r1.example", agent_version: "1.0.0" });

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("enrollment hygiene", () => {
  it("issuing a new enrollment token makes the older unused ones useless", async () => {
    const created = await call(t.rootKey, "POST", "/v1/speakers", { name: "edge-tokens", mode: "remote", router_id: "192.0.2.1", asn: 65010 });
    expect(created.statusCode, created.body).toBe(201);
    const first = created.json().enrollment_token as string;
    const issued = await call(t.rootKey, "POST", `/v1/speakers/${created.json().id}/enrollment-token`);
    expect(issued.statusCode, issued.body).toBe(201);
    const second = issued.json().enrollment_token as string;

    expect((await enrollWith(first)).statusCode).toBe(401);
    const enrolled = await enrollWith(second);
    expect(enrolled.statusCode, enrolled.body).toBe(201);
  });

  it("re-enrolling revokes the speaker's previous node keys", async () => {
    const created = await call(t.rootKey, "POST", "/v1/speakers", { name: "edge-keys", mode: "remote", router_id: "192.0.2.2", asn: 65010 });
    const speakerId = created.json().id as string;
    const oldKey = (await enrollWith(created.json().enrollment_token)).json().api_key as string;
    const latest = `/v1/speakers/${speakerId}/revisions/latest`;
    // Known and valid (404: no desired revision yet), and now in the authentication cache.
    expect((await call(oldKey, "GET", latest)).statusCode).toBe(404);

    const token = (await call(t.rootKey, "POST", `/v1/speakers/${speakerId}/enrollment-token`)).json().enrollment_token as string;
    const again = await enrollWith(token);
    expect(again.statusCode, again.body).toBe(201);
    const newKey = again.json().api_key as string;

    expect((await call(oldKey, "GET", latest)).statusCode).toBe(401);
    expect((await call(newKey, "GET", latest)).statusCode).toBe(404);
    const keys = (await call(t.rootKey, "GET", "/v1/api-keys?limit=500")).json().items as { speaker_id: string | null; revoked_at: string | null }[];
    expect(keys.filter((k) => k.speaker_id === speakerId && k.revoked_at === null)).toHaveLength(1);
  });
});
