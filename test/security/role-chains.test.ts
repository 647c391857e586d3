import { verifyBundle } from "@rlc/shared/bundle";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

// No chain of calls an operator may make yields a secret an admin set: the walk of issue 24's
// item 3 (make a speaker, get it a node key, put it on an admin's peer, apply, download the
// bundle), step by step, with every answer the operator got searched for the password.

let t: TestController;
const PASSWORD = "admins-md5-secret";
let admin: string;
let operator: string;
let peerId: string;
let revisionId: number;
let adminSpeaker: { id: string; nodeKey: string; tenantId: string; pinned: any[] };
/** Every answer the operator received, whatever its status. */
const seenByOperator: LightMyRequestResponse[] = [];

const call = (key: string | null, method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) =>
  t.call(key, { method, url, ...(payload ? { payload } : {}) });
async function asOperator(method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) {
  const res = await call(operator, method, url, payload);
  seenByOperator.push(res);
  return res;
}
const mint = async (role: string) => (await call(t.rootKey, "POST", "/v1/api-keys", { name: role, role })).json().secret as string;

beforeAll(async () => {
  t = await startTestController();
  admin = await mint("admin");
  operator = await mint("operator");
  // The admin's side: an enrolled router on a peer with a password, and a revision.
  const created = (await call(admin, "POST", "/v1/speakers", { name: "real-router", router_id: "192.0.2.21", asn: 65021 })).json();
  const enrolled = (await call(created.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "real.example", agent_version: "1.0.0" })).json();
  adminSpeaker = { id: created.id, nodeKey: enrolled.api_key, tenantId: enrolled.tenant_id, pinned: enrolled.signing_keys };
  const peer = await call(admin, "POST", "/v1/peers", {
    name: "transit",
    neighbor_address: "192.0.2.254",
    remote_asn: 65100,
    password: PASSWORD,
    address_families: ["ipv4"],
    speaker_ids: [adminSpeaker.id],
  });
  expect(peer.statusCode, peer.body).toBe(201);
  peerId = peer.json().id;
  const mod = (await call(admin, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES" })).json();
  await call(admin, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.2.0.0/16" });
  revisionId = (await call(admin, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
}, 60_000);
afterAll(async () => t?.close());

describe("an operator walking the chain to an admin's peer password", () => {
  let speakerId: string;

  it("creates a remote speaker and gets no enrollment token with it", async () => {
    const created = await asOperator("POST", "/v1/speakers", { name: "mine", router_id: "192.0.2.66", asn: 65066 });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json()).toMatchObject({ mode: "remote", enrollment_token: null, enrollment_token_expires_at: null });
    speakerId = created.json().id;
  });

  it("cannot issue a token for it, nor for the admin's router", async () => {
    for (const id of [speakerId, adminSpeaker.id]) {
      const res = await asOperator("POST", `/v1/speakers/${id}/enrollment-token`);
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json().code).toBe("forbidden");
    }
  });

  it("cannot enroll it without a token, nor make, rotate or revoke a node key", async () => {
    for (const token of [operator, "rlt_guessed-token"]) {
      const enroll = await call(token, "POST", "/v1/nodes/enroll", { hostname: "mine.example", agent_version: "1.0.0" });
      seenByOperator.push(enroll);
      expect(enroll.statusCode, enroll.body).toBe(401);
    }
    expect((await asOperator("POST", "/v1/api-keys", { name: "n", role: "node" })).statusCode).toBe(400);
    const nodeKeys = (await call(admin, "GET", "/v1/api-keys?role=node")).json().items;
    expect(nodeKeys).toHaveLength(1);
    expect((await asOperator("POST", `/v1/api-keys/${nodeKeys[0].id}/rotate`, {})).statusCode).toBe(403);
    expect((await asOperator("PATCH", `/v1/api-keys/${nodeKeys[0].id}`, { name: "mine now" })).statusCode).toBe(403);
    expect((await asOperator("DELETE", `/v1/api-keys/${nodeKeys[0].id}`)).statusCode).toBe(403);
    expect((await asOperator("DELETE", `/v1/speakers/${adminSpeaker.id}?force=true`)).statusCode).toBe(403);
  });

  it("may add its speaker to the admin's peer and apply, but never downloads the bundle", async () => {
    const patched = await asOperator("PATCH", `/v1/peers/${peerId}`, { speaker_ids: [adminSpeaker.id, speakerId] });
    expect(patched.statusCode, patched.body).toBe(200);
    expect(patched.json().password_set).toBe(true);
    const apply = await asOperator("POST", `/v1/speakers/${speakerId}/apply`, { revision_id: revisionId });
    expect(apply.statusCode, apply.body).toBe(202);
    const latest = await until<{ bundle_url: string }>("the operator's speaker to have a desired revision", async () => {
      const res = await asOperator("GET", `/v1/speakers/${speakerId}/revisions/latest`);
      return res.statusCode === 200 ? res.json() : null;
    });
    await call(t.rootKey, "POST", `/v1/jobs/${apply.json().job_id}/cancel`);
    const bundle = await asOperator("GET", latest.bundle_url);
    expect(bundle.statusCode, bundle.body).toBe(403);
    const preview = await asOperator("GET", `/v1/revisions/${revisionId}/preview?speaker_id=${speakerId}`);
    expect(preview.statusCode, preview.body).toBe(200);
    expect(preview.json().bird_config_excerpt).toContain('password "********";');
  });

  it("the password was in the bundle all along, for the admin's router only, and in no answer the operator got", async () => {
    const apply = await call(admin, "POST", "/v1/apply", { speaker_ids: [adminSpeaker.id], revision_id: revisionId, timeout_seconds: 20 });
    expect(apply.statusCode, apply.body).toBe(202);
    const latest = await until<{ bundle_url: string }>("the admin's router to have a desired revision", async () => {
      const res = await call(adminSpeaker.nodeKey, "GET", `/v1/speakers/${adminSpeaker.id}/revisions/latest`);
      return res.statusCode === 200 ? res.json() : null;
    });
    await call(t.rootKey, "POST", `/v1/jobs/${apply.json().job_id}/cancel`);
    const got = await call(adminSpeaker.nodeKey, "GET", latest.bundle_url);
    expect(got.statusCode).toBe(200);
    const verified = await verifyBundle(got.rawPayload, adminSpeaker.pinned, {
      speakerId: adminSpeaker.id,
      tenantId: adminSpeaker.tenantId,
      lastSequence: null,
      now: new Date(),
    });
    expect(verified.payload.peers).toEqual([expect.objectContaining({ id: peerId, password: PASSWORD })]);

    expect(seenByOperator.length).toBeGreaterThan(10);
    for (const res of seenByOperator) {
      expect(res.body, `${res.statusCode} ${res.body.slice(0, 120)}`).not.toContain(PASSWORD);
      expect(res.rawPayload.includes(Buffer.from(PASSWORD))).toBe(false);
    }
  });
});
