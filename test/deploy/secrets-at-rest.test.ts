import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateSigningKey, verifyBundle, verifyKeyStatement } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { startController } from "../../packages/controller/src/controller.js";
import { isSealed } from "../../packages/controller/src/lib/secret-box.js";
import { embeddedRun, startTestController, type TestController } from "../helpers/controller.js";

// Secrets kept by the controller (peer passwords, DoH header values, signing seeds) are sealed
// with the data key in the database, never shown by a read, and only the speaker's node key
// receives a bundle with the real password.

let t: TestController;
let dataDir: string;
const PASSWORD = "md5-s3cret-pw";
const TOKEN = "tok-0123456789-secret";
const call = (key: string | null, method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) =>
  t.call(key, { method, url, ...(payload ? { payload } : {}) });
const box = () => t.controller.deps.services.secretBox;
/** Applies wait for an agent that never answers here: stop them so the queue moves on. */
const stopJobs = () =>
  t.controller.db.sql`UPDATE jobs SET cancel_requested = true WHERE status IN ('queued', 'running') AND type IN ('apply', 'peer_reconcile')`;
const sql = () => t.controller.db.sql;

let viewer: string;
let operator: string;
let speakerId: string;
let nodeKey: string;
let tenantId: string;
let pinned: { key_id: string; public_key: string; status: "active" | "retired" }[];
let revisionId: number;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "rlc-secrets-"));
  t = await startTestController({ env: { APP_DATA_DIR: dataDir, APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" } });
  viewer = (await call(t.rootKey, "POST", "/v1/api-keys", { name: "v", role: "viewer" })).json().secret;
  operator = (await call(t.rootKey, "POST", "/v1/api-keys", { name: "o", role: "operator" })).json().secret;
  const created = (
    await call(t.rootKey, "POST", "/v1/speakers", { name: "edge-s", router_id: "192.0.2.11", asn: 65020, policies_json: { local_ip: "192.0.2.11" } })
  ).json();
  speakerId = created.id;
  const enrolled = (await call(created.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "r.example", agent_version: "1.0.0" })).json();
  nodeKey = enrolled.api_key;
  tenantId = enrolled.tenant_id;
  pinned = enrolled.signing_keys;
  const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES" })).json();
  await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.1.0.0/16" });
  revisionId = (await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await rm(dataDir, { recursive: true, force: true });
});

describe("peer passwords", () => {
  let peerId: string;

  it("are sealed in the database and read back only as password_set", async () => {
    const res = await call(t.rootKey, "POST", "/v1/peers", {
      name: "up",
      neighbor_address: "192.0.2.254",
      remote_asn: 65100,
      password: PASSWORD,
      address_families: ["ipv4"],
      speaker_ids: [speakerId],
    });
    expect(res.statusCode, res.body).toBe(201);
    peerId = res.json().id;
    const [row] = await sql()<{ password: string; password_sealed: boolean }[]>`SELECT password, password_sealed FROM peers WHERE id = ${peerId}`;
    expect(row!.password).not.toContain(PASSWORD);
    expect(row!.password_sealed).toBe(true);
    expect(isSealed(row!.password)).toBe(true);
    expect(box().openText(row!.password)).toBe(PASSWORD);
    const read = await call(viewer, "GET", `/v1/peers/${peerId}`);
    expect(read.json()).toMatchObject({ password_set: true });
    expect(read.json()).not.toHaveProperty("password");
    expect((await call(viewer, "GET", "/v1/peers")).body).not.toContain(PASSWORD);
  });

  it("a viewer's revision preview for the speaker renders the password masked", async () => {
    const res = await call(viewer, "GET", `/v1/revisions/${revisionId}/preview?speaker_id=${speakerId}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.body).not.toContain(PASSWORD);
    expect(res.json().bird_config_excerpt).toContain('password "********";');
  });

  it("only the speaker's node key receives the bundle, and it carries the real password", async () => {
    const apply = await call(t.rootKey, "POST", "/v1/apply", { speaker_ids: [speakerId], timeout_seconds: 20 });
    expect(apply.statusCode, apply.body).toBe(202);
    let latest = await call(nodeKey, "GET", `/v1/speakers/${speakerId}/revisions/latest`);
    for (let i = 0; i < 200 && latest.statusCode !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      latest = await call(nodeKey, "GET", `/v1/speakers/${speakerId}/revisions/latest`);
    }
    expect(latest.statusCode, latest.body).toBe(200);
    await call(t.rootKey, "POST", `/v1/jobs/${apply.json().job_id}/cancel`);
    const url = latest.json().bundle_url;
    for (const key of [operator, t.rootKey]) {
      const refused = await call(key, "GET", url);
      expect(refused.statusCode, refused.body).toBe(403);
      expect(refused.headers["content-type"]).toContain("application/problem+json");
      expect(refused.body).not.toContain(PASSWORD);
    }
    // The operator still sees where the desired revision stands.
    expect((await call(operator, "GET", `/v1/speakers/${speakerId}/revisions/latest`)).statusCode).toBe(200);
    const got = await call(nodeKey, "GET", url);
    expect(got.statusCode).toBe(200);
    const verified = await verifyBundle(got.rawPayload, pinned, { speakerId, tenantId, lastSequence: null, now: new Date() });
    expect(verified.payload.peers).toEqual([expect.objectContaining({ id: peerId, password: PASSWORD })]);
    // The stored bundle is the one secret-bearing copy; the password is in no audit record.
    expect(JSON.stringify((await call(t.rootKey, "GET", "/v1/audit?limit=500")).json())).not.toContain(PASSWORD);
  });

  it("an update that leaves the password out keeps it; a new one replaces it, sealed", async () => {
    await call(t.rootKey, "PATCH", `/v1/peers/${peerId}`, { description: "kept" });
    let [row] = await sql()<{ password: string }[]>`SELECT password FROM peers WHERE id = ${peerId}`;
    expect(box().openText(row!.password)).toBe(PASSWORD);
    await call(t.rootKey, "PATCH", `/v1/peers/${peerId}`, { password: "another-one" });
    [row] = await sql()<{ password: string }[]>`SELECT password FROM peers WHERE id = ${peerId}`;
    expect(box().openText(row!.password)).toBe("another-one");
    const [audit] = (await call(t.rootKey, "GET", "/v1/audit?resource_type=peer&limit=1")).json().items;
    // Recorded as changed (the audit journal redacts the value itself).
    expect(audit.changes).toHaveProperty("password");
    expect(JSON.stringify(audit)).not.toContain("another-one");
  });

  it("is bound to the neighbor: a new neighbor_address drops it unless the same request sends it again", async () => {
    const moved = await call(operator, "PATCH", `/v1/peers/${peerId}`, { neighbor_address: "203.0.113.66" });
    expect(moved.statusCode, moved.body).toBe(200);
    expect(moved.json()).toMatchObject({ neighbor_address: "203.0.113.66", password_set: false });
    let [row] = await sql()<{ password: string | null }[]>`SELECT password FROM peers WHERE id = ${peerId}`;
    expect(row!.password).toBeNull();
    const [audit] = (await call(t.rootKey, "GET", "/v1/audit?resource_type=peer&limit=1")).json().items;
    expect(audit.changes).toHaveProperty("password");

    const withIt = await call(t.rootKey, "PATCH", `/v1/peers/${peerId}`, { neighbor_address: "192.0.2.254", password: PASSWORD });
    expect(withIt.json()).toMatchObject({ neighbor_address: "192.0.2.254", password_set: true });
    [row] = await sql()<{ password: string }[]>`SELECT password FROM peers WHERE id = ${peerId}`;
    expect(box().openText(row!.password!)).toBe(PASSWORD);
    // The same address, or any other field, keeps it.
    const same = await call(operator, "PATCH", `/v1/peers/${peerId}`, { neighbor_address: "192.0.2.254", neighbor_port: 1179, description: "same" });
    expect(same.json()).toMatchObject({ password_set: true });
  });
});

describe("DoH profile headers", () => {
  let server: Server;
  let seen: IncomingHttpHeaders[];
  let serverUrl: string;

  beforeAll(async () => {
    await stopJobs();
    seen = [];
    server = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { "content-type": "application/dns-json" });
      const name = new URL(req.url ?? "/", "http://x").searchParams.get("name") ?? "";
      const type = new URL(req.url ?? "/", "http://x").searchParams.get("type");
      res.end(JSON.stringify({ Status: 0, Answer: type === "A" || type === "1" ? [{ name, type: 1, TTL: 60, data: "198.51.100.7" }] : [] }));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    serverUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/resolve`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  let profileId: string;

  it("values are sealed in the database and masked on every read, a viewer's too", async () => {
    const res = await call(t.rootKey, "POST", "/v1/doh-profiles", { name: "tokened", url: serverUrl, format: "json", headers: { "X-Api-Key": TOKEN } });
    expect(res.statusCode, res.body).toBe(201);
    profileId = res.json().id;
    expect(res.json().headers).toEqual({ "X-Api-Key": "********" });
    const [row] = await sql()<
      { headers: Record<string, string>; headers_sealed: boolean }[]
    >`SELECT headers, headers_sealed FROM doh_profiles WHERE id = ${profileId}`;
    expect(JSON.stringify(row)).not.toContain(TOKEN);
    expect(row!.headers_sealed).toBe(true);
    expect(box().openText(row!.headers["X-Api-Key"]!)).toBe(TOKEN);
    for (const url of [`/v1/doh-profiles/${profileId}`, "/v1/doh-profiles", "/v1/router-lists/catalog"]) {
      const read = await call(viewer, "GET", url);
      expect(read.statusCode, url).toBe(200);
      expect(read.body, url).not.toContain(TOKEN);
      expect(read.body, url).toContain('"X-Api-Key":"********"');
    }
  });

  it("`********` in an update keeps the stored value; a mask for a header the profile lacks is a 400", async () => {
    const res = await call(t.rootKey, "PATCH", `/v1/doh-profiles/${profileId}`, { headers: { "X-Api-Key": "********", "X-Client": "rl" }, timeout_ms: 4000 });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().headers).toEqual({ "X-Api-Key": "********", "X-Client": "********" });
    const [row] = await sql()<{ headers: Record<string, string> }[]>`SELECT headers FROM doh_profiles WHERE id = ${profileId}`;
    expect(box().openText(row!.headers["X-Api-Key"]!)).toBe(TOKEN);
    expect(box().openText(row!.headers["X-Client"]!)).toBe("rl");
    const bad = await call(t.rootKey, "PATCH", `/v1/doh-profiles/${profileId}`, { headers: { "X-Other": "********" } });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().errors[0].path).toBe("body.headers.X-Other");
  });

  let moduleId: string;

  it("the collector sends the real value to the resolver", async () => {
    const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "domains", type: "DOMAINS", doh_profile_id: profileId })).json();
    moduleId = mod.id;
    expect((await call(t.rootKey, "POST", `/v1/modules/${mod.id}/domain-entries`, { domain: "svc.example" })).statusCode).toBe(201);
    const refreshed = await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((h) => h["x-api-key"] === TOKEN && h["x-client"] === "rl")).toBe(true);
  });

  it("values are bound to the URL's origin: moved elsewhere, the next refresh sends the stored ones to nobody", async () => {
    const elsewhere: IncomingHttpHeaders[] = [];
    const other = createServer((req, res) => {
      elsewhere.push(req.headers);
      res.writeHead(200, { "content-type": "application/dns-json" }).end(JSON.stringify({ Status: 0, Answer: [] }));
    });
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    const otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}/resolve`;
    try {
      // `********` cannot carry a stored value to the new origin.
      const masked = await call(operator, "PATCH", `/v1/doh-profiles/${profileId}`, { url: otherUrl, headers: { "X-Api-Key": "********" } });
      expect(masked.statusCode, masked.body).toBe(400);
      expect(masked.json().errors[0].path).toBe("body.headers.X-Api-Key");

      const moved = await call(operator, "PATCH", `/v1/doh-profiles/${profileId}`, { url: otherUrl });
      expect(moved.statusCode, moved.body).toBe(200);
      expect(moved.json().headers).toEqual({});
      const refreshed = await call(t.rootKey, "POST", `/v1/modules/${moduleId}/refresh?wait=true`);
      expect(refreshed.statusCode, refreshed.body).toBe(200);
      expect(elsewhere.length).toBeGreaterThan(0);
      for (const h of elsewhere) {
        expect(h["x-api-key"]).toBeUndefined();
        expect(h["x-client"]).toBeUndefined();
        expect(JSON.stringify(h)).not.toContain(TOKEN);
      }
      const [audit] = (await call(t.rootKey, "GET", "/v1/audit?resource_type=doh_profile&limit=1")).json().items;
      expect(audit.changes).toHaveProperty("headers");

      // A value sent again with the move goes to the new origin; a path change on the same origin keeps it.
      expect((await call(t.rootKey, "PATCH", `/v1/doh-profiles/${profileId}`, { url: serverUrl, headers: { "X-Api-Key": TOKEN } })).statusCode).toBe(200);
      const samePlace = await call(operator, "PATCH", `/v1/doh-profiles/${profileId}`, { url: serverUrl.replace("/resolve", "/resolve?v=2") });
      expect(samePlace.json().headers).toEqual({ "X-Api-Key": "********" });
      seen.length = 0;
      await call(t.rootKey, "POST", `/v1/modules/${moduleId}/refresh?wait=true`);
      expect(seen.length).toBeGreaterThan(0);
      expect(seen.every((h) => h["x-api-key"] === TOKEN)).toBe(true);
    } finally {
      other.closeAllConnections();
      await new Promise((r) => other.close(r));
    }
  });
});

describe("rows an earlier version stored in plain text", () => {
  it("are sealed at the next start, once; each tenant gets its own key, introduced by the shared one", async () => {
    await stopJobs();
    const db = sql();
    const legacy = await generateSigningKey();
    const tenant = (await call(t.rootKey, "POST", "/v1/tenants", { name: "older" })).json();
    // What the database held before: a plain password, a plain header value, a shared plain seed.
    await db`INSERT INTO peers (id, tenant_id, name, neighbor_address, remote_asn, password, created_at, updated_at)
             VALUES ('01900000-0000-7000-8000-0000000000aa', ${tenant.tenant_id}, 'legacy', '192.0.2.99', 65200, 'plain-pw', now(), now())`;
    await db`INSERT INTO doh_profiles (id, tenant_id, url, method, format, timeout_ms, headers, created_at, updated_at)
             VALUES ('01900000-0000-7000-8000-0000000000ab', ${tenant.tenant_id}, 'https://dns.example/dns-query', 'GET', 'wire', 3000, ${db.json({ Authorization: "Bearer plain" })}, now(), now())`;
    await db`INSERT INTO signing_keys (key_id, public_key, seed, status, created_at)
             VALUES (${legacy.keyId}, ${Buffer.from(legacy.publicKey)}, ${Buffer.from(legacy.seed)}, 'active', now() - interval '1 day')`;

    const config = loadConfig({ DATABASE_URL: t.db.url, LOG_LEVEL: "silent", APP_DATA_DIR: dataDir });
    if (embeddedRun) {
      // One process owns an embedded database: the running controller stops first, and the
      // second start stays up for the checks below.
      await t.controller.close();
      await (await startController(config, { logger: false })).close();
      const again = await startController(config, { logger: false });
      const first = t;
      t = {
        ...first,
        controller: again,
        app: again.app,
        call: (key, o) => again.app.inject({ ...o, headers: { ...(o.headers ?? {}), ...(key ? { authorization: `Bearer ${key}` } : {}) } }),
        close: async () => {
          await again.close();
          await first.db.drop();
        },
      };
    } else {
      for (let start = 0; start < 2; start++) {
        const again = await startController(config, { logger: false });
        await again.close();
      }
    }
    const db2 = sql();

    const [peer] = await db2<{ password: string; password_sealed: boolean }[]>`SELECT password, password_sealed FROM peers WHERE name = 'legacy'`;
    expect(peer!.password_sealed).toBe(true);
    expect(box().openText(peer!.password)).toBe("plain-pw"); // sealed once: a second seal would not open to the plain text
    const [profile] = await db2<{ headers: Record<string, string> }[]>`SELECT headers FROM doh_profiles WHERE id = '01900000-0000-7000-8000-0000000000ab'`;
    expect(box().openText(profile!.headers.Authorization!)).toBe("Bearer plain");
    expect(await db2`SELECT key_id FROM signing_keys WHERE seed IS NOT NULL`).toHaveLength(0);
    const [shared] = await db2<{ status: string; seed_sealed: string | null }[]>`SELECT status, seed_sealed FROM signing_keys WHERE key_id = ${legacy.keyId}`;
    expect(shared).toEqual({ status: "retired", seed_sealed: null });

    const keys = (await call(tenant.admin_key.secret, "GET", "/v1/nodes/signing-keys")).json().keys;
    const own = keys.filter((k: any) => k.status === "active");
    expect(own).toHaveLength(1);
    expect(keys.find((k: any) => k.key_id === legacy.keyId)).toMatchObject({ status: "retired" });
    // An agent that pinned the shared key follows the statement to its tenant's own key.
    const verified = await verifyKeyStatement(own[0].statement, [
      { key_id: legacy.keyId, public_key: Buffer.from(legacy.publicKey).toString("base64"), alg: "ed25519", status: "active" },
    ]);
    expect(verified.key.key_id).toBe(own[0].key_id);
    const [sealedSeed] = await db2<{ seed_sealed: string }[]>`SELECT seed_sealed FROM signing_keys WHERE key_id = ${own[0].key_id}`;
    expect(isSealed(sealedSeed!.seed_sealed)).toBe(true);
  });
});
