import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BundleError, buildBundlePayload, signBundle, verifyBundle } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { updatePinnedKeys } from "../../packages/agent/src/bundle/signing-keys.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// Each tenant's bundles are signed by its own key: one tenant's admin rotates only its own, and
// an agent of one tenant never takes a bundle signed with another tenant's key.

let t: TestController;
const call = (key: string | null, method: "GET" | "POST", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });
const keyIds = (keys: { key_id: string }[]) => keys.map((k) => k.key_id);

let adminB: string;
let tenantB: string;
let enrolledB: { speaker_id: string; tenant_id: string; signing_keys: any[] };

beforeAll(async () => {
  t = await startTestController();
  const b = (await call(t.rootKey, "POST", "/v1/tenants", { name: "tenant-b" })).json();
  adminB = b.admin_key.secret;
  tenantB = b.tenant_id;
  const speaker = (await call(adminB, "POST", "/v1/speakers", { name: "b-edge", router_id: "192.0.2.21", asn: 65030 })).json();
  enrolledB = (await call(speaker.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "b.example", agent_version: "1.0.0" })).json();
}, 60_000);
afterAll(async () => t?.close());

describe("per-tenant signing keys", () => {
  it("each tenant lists its own key; enrollment hands the agent its tenant's keys", async () => {
    const a = (await call(t.rootKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    const b = (await call(adminB, "GET", "/v1/nodes/signing-keys")).json().keys;
    expect(a).toEqual([expect.objectContaining({ status: "active" })]);
    expect(b).toEqual([expect.objectContaining({ status: "active" })]);
    expect(a[0].key_id).not.toBe(b[0].key_id);
    expect(enrolledB.tenant_id).toBe(tenantB);
    expect(keyIds(enrolledB.signing_keys)).toEqual(keyIds(b));
  });

  it("a tenant admin's rotation changes that tenant's keys only; an operator may not rotate", async () => {
    const operatorA = (await call(t.rootKey, "POST", "/v1/api-keys", { name: "op", role: "operator" })).json().secret;
    expect((await call(operatorA, "POST", "/v1/nodes/signing-keys/rotate")).statusCode).toBe(403);
    const beforeB = (await call(adminB, "GET", "/v1/nodes/signing-keys")).json().keys;
    const rotated = await call(t.rootKey, "POST", "/v1/nodes/signing-keys/rotate");
    expect(rotated.statusCode, rotated.body).toBe(201);
    expect((await call(t.rootKey, "GET", "/v1/nodes/signing-keys")).json().keys.map((k: any) => k.status)).toEqual(["retired", "active"]);
    expect((await call(adminB, "GET", "/v1/nodes/signing-keys")).json().keys).toEqual(beforeB);
    // B's own rotation leaves A alone.
    const keysA = (await call(t.rootKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    expect((await call(adminB, "POST", "/v1/nodes/signing-keys/rotate")).statusCode).toBe(201);
    expect((await call(t.rootKey, "GET", "/v1/nodes/signing-keys")).json().keys).toEqual(keysA);
    const audit = (await call(adminB, "GET", "/v1/audit?resource_type=signing_key")).json().items;
    expect(audit).toHaveLength(1);
  });

  it("an agent of tenant B refuses a bundle signed with tenant A's key, and never pins A's keys", async () => {
    const pinnedB = (await call(adminB, "GET", "/v1/nodes/signing-keys")).json().keys;
    const listedA = (await call(t.rootKey, "GET", "/v1/nodes/signing-keys")).json().keys;
    const defaultTenant = (await call(t.rootKey, "GET", "/v1/auth/session")).json().tenant_id;
    // A's active key, as the controller signs A's bundles with it.
    const keyA = await t.controller.deps.services.signing.activeKey(t.controller.db.sql, defaultTenant);
    expect(keyIds(listedA)).toContain(keyA.keyId);
    const payload = buildBundlePayload(
      {
        tenant_id: tenantB,
        speaker_id: enrolledB.speaker_id,
        revision_id: 1,
        speaker: { router_id: "192.0.2.21", asn: 65030, policies_json: {} },
        bird: {},
        communities: [],
        peers: [],
        prefixes: { v4: [["10.66.0.0/16", []]], v6: [] },
      },
      { sequence: 1, issuedAt: new Date() },
    );
    const forged = JSON.stringify(await signBundle(payload, keyA.secretKey, keyA.keyId));
    const opts = { speakerId: enrolledB.speaker_id, tenantId: tenantB, lastSequence: null, now: new Date() };
    await expect(verifyBundle(forged, pinnedB, opts)).rejects.toMatchObject({ code: "unknown_key" });
    // Shown A's listing (statements included), the agent's key update pins none of A's keys.
    const update = await updatePinnedKeys(
      pinnedB.map((k: any) => ({ key_id: k.key_id, alg: "ed25519", public_key: k.public_key, status: k.status })),
      listedA,
    );
    expect(update.added).toEqual([]);
    await expect(verifyBundle(forged, update.keys, opts)).rejects.toBeInstanceOf(BundleError);
    // The same bundle signed with B's key is taken.
    const keyB = await t.controller.deps.services.signing.activeKey(t.controller.db.sql, tenantB);
    const genuine = JSON.stringify(await signBundle(payload, keyB.secretKey, keyB.keyId));
    await expect(verifyBundle(genuine, pinnedB, opts)).resolves.toMatchObject({ keyId: keyB.keyId });
  });
});

describe("BUNDLE_SIGNING_KEY_FILE", () => {
  let dir: string;
  let pinnedController: TestController;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "rlc-keyfile-"));
    await writeFile(join(dir, "seed"), randomBytes(32).toString("base64"));
    pinnedController = await startTestController({ env: { BUNDLE_SIGNING_KEY_FILE: join(dir, "seed") } });
  }, 60_000);
  afterAll(async () => {
    await pinnedController?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("signs for every tenant with the one pinned key, and rotation answers 409", async () => {
    const c = pinnedController;
    const other = (await c.call(c.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "other" } })).json();
    const a = (await c.call(c.rootKey, { method: "GET", url: "/v1/nodes/signing-keys" })).json().keys;
    const b = (await c.call(other.admin_key.secret, { method: "GET", url: "/v1/nodes/signing-keys" })).json().keys;
    expect(a).toEqual([expect.objectContaining({ status: "active" })]);
    expect(b).toEqual(a);
    const rotate = await c.call(other.admin_key.secret, { method: "POST", url: "/v1/nodes/signing-keys/rotate" });
    expect(rotate.statusCode).toBe(409);
    expect(rotate.json().code).toBe("conflict");
  });
});
