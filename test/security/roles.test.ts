import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintApiKey } from "../../packages/controller/src/services/access/api-keys.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { fill, type Operation, operationsOf, ROLE_RANK } from "./operations.js";

// The role × operation matrix, generated from the OpenAPI document: each operation declares
// its minimum role (`x-min-role`, `x-node-key`, `x-deployment`), and every kind of key gets
// exactly that: 403 `forbidden` below it, anything but 401/403 at or above it. Deployment
// operations take their role in tenant `default` only: keys of any other tenant get 403.

interface Caller {
  name: string;
  role: string;
  tenant: string;
  key: string;
}

let t: TestController;
let ops: Operation[];
let callers: Caller[];
let speakerId: string;
let logDir: string;

beforeAll(async () => {
  // A log directory, so the runtime-log operations answer (not 503) to the keys they admit.
  logDir = await mkdtemp(join(tmpdir(), "rlc-matrix-logs-"));
  await writeFile(join(logDir, "app.log"), "a line\n");
  t = await startTestController({ env: { GRPC_PORT: "0", APP_RUNTIME_LOGS_DIR: logDir } });
  ops = operationsOf((await t.call(null, { method: "GET", url: "/v1/openapi.json" })).json());
  const mint = async (role: string) =>
    (await t.call(t.rootKey, { method: "POST", url: "/v1/api-keys", payload: { name: role, role } })).json().secret as string;
  const speaker = await t.call(t.rootKey, {
    method: "POST",
    url: "/v1/speakers",
    payload: { name: "matrix-1", mode: "remote", router_id: "192.0.2.1", asn: 65010, policies_json: { local_ip: "192.0.2.1" } },
  });
  speakerId = speaker.json().speaker_id;
  const enrolled = await t.call(speaker.json().enrollment_token, {
    method: "POST",
    url: "/v1/nodes/enroll",
    payload: { hostname: "r1", agent_version: "1.0.0" },
  });
  const other = (await t.call(t.rootKey, { method: "POST", url: "/v1/tenants", payload: { name: "matrix-other" } })).json();
  const otherRoot = await mintApiKey(t.controller.db.sql, { tenantId: other.tenant_id, name: "root", role: "superadmin", now: new Date() });
  const otherViewer = await mintApiKey(t.controller.db.sql, { tenantId: other.tenant_id, name: "viewer", role: "viewer", now: new Date() });
  callers = [
    { name: "viewer of another tenant", role: "viewer", tenant: "matrix-other", key: otherViewer.secret },
    { name: "admin of another tenant", role: "admin", tenant: "matrix-other", key: other.admin_key.secret },
    { name: "viewer", role: "viewer", tenant: "default", key: await mint("viewer") },
    { name: "operator", role: "operator", tenant: "default", key: await mint("operator") },
    { name: "admin", role: "admin", tenant: "default", key: await mint("admin") },
    { name: "node", role: "node", tenant: "default", key: enrolled.json().api_key },
    { name: "superadmin of another tenant", role: "superadmin", tenant: "matrix-other", key: otherRoot.secret },
    { name: "superadmin", role: "superadmin", tenant: "default", key: t.rootKey },
  ];
});
afterAll(async () => {
  await t?.close();
  await rm(logDir, { recursive: true, force: true });
});

function allowed(op: Operation, who: Caller): boolean {
  if (op.minRole === "public" || op.minRole === "any") return true;
  if (who.role === "node") return op.node;
  if (ROLE_RANK[who.role]! < ROLE_RANK[op.minRole]!) return false;
  return !op.deployment || who.tenant === "default";
}

describe("role × operation matrix from the OpenAPI document", () => {
  it("every operation declares who may call it", () => {
    const undeclared = ops.filter((op) => !["public", "any", "viewer", "operator", "admin", "superadmin"].includes(op.minRole));
    expect(undeclared.map((op) => `${op.method} ${op.template}`)).toEqual([]);
    expect(ops.length).toBeGreaterThan(60);
  });

  it("declares the deployment's operations, enrollment tokens and signing keys as the security model says", async () => {
    const declared = (key: string) => {
      const op = ops.find((o) => `${o.method} ${o.template}` === key);
      return op ? `${op.minRole}${op.deployment ? " in tenant default" : ""}` : "missing";
    };
    const expected: Record<string, string> = {
      // SPEC.md's roles, in the deployment's tenant only.
      "GET /v1/runtime-logs/files": "viewer in tenant default",
      "GET /v1/runtime-logs/files/{filename}": "viewer in tenant default",
      "GET /v1/runtime-logs/cleanup-audit": "viewer in tenant default",
      "DELETE /v1/runtime-logs/files/{filename}": "operator in tenant default",
      "GET /v1/runtime-logs/auto-estimate": "operator in tenant default",
      "POST /v1/runtime-logs/auto-run": "operator in tenant default",
      // The deployment's superadmins.
      "GET /v1/maintenance/db": "superadmin in tenant default",
      "POST /v1/maintenance/db/analyze": "superadmin in tenant default",
      "GET /v1/tenants": "superadmin in tenant default",
      "POST /v1/tenants": "superadmin in tenant default",
      "GET /v1/tenants/{id}": "superadmin in tenant default",
      "GET /v1/bird/status": "superadmin in tenant default",
      "POST /v1/bird/reload": "superadmin in tenant default",
      // A router's identity: its enrollment token (the node key it becomes) is an admin's to hand out.
      "POST /v1/speakers/{speaker_id}/enrollment-token": "admin",
      // Signing keys are each tenant's own; the one deployment-wide key (BUNDLE_SIGNING_KEY_FILE) has no route.
      "POST /v1/nodes/signing-keys/rotate": "admin",
    };
    expect(Object.fromEntries(Object.keys(expected).map((k) => [k, declared(k)]))).toEqual(expected);
    const deploymentOps = ops.filter((o) => o.deployment).map((o) => `${o.method} ${o.template}`);
    expect(deploymentOps.sort()).toEqual(
      Object.keys(expected)
        .filter((k) => expected[k]!.endsWith("in tenant default"))
        .sort(),
    );
  });

  it("each key gets 403 below the declared role and never 401/403 at or above it", async () => {
    const wrong: string[] = [];
    let checked = 0;
    let refused = 0;
    // Lower roles first, so nothing a superadmin's call changes is seen by the others.
    for (const who of callers) {
      for (const op of ops) {
        if (op.minRole === "public") continue;
        const url = fill(op, who.role === "node" && op.node ? { speaker_id: speakerId } : {});
        const res = await t.call(who.key, { method: op.method as "GET", url, ...(op.hasBody ? { payload: {} } : {}) });
        checked++;
        const expectOk = allowed(op, who);
        if (!expectOk) refused++;
        const got = res.statusCode;
        if (expectOk && (got === 401 || got === 403))
          wrong.push(`${who.name} ${op.method} ${op.template}: ${got} ${res.body.slice(0, 160)} (declared ${op.minRole})`);
        if (!expectOk && (got !== 403 || res.json().code !== "forbidden"))
          wrong.push(`${who.name} ${op.method} ${op.template}: ${got}, expected 403 (declared ${op.minRole})`);
      }
    }
    expect(checked).toBeGreaterThan(300);
    expect(refused).toBeGreaterThan(100);
    expect(wrong).toEqual([]);
  }, 60_000);
});

describe("node keys and enrollment tokens by role", () => {
  const byRole = (role: string) => callers.find((c) => c.tenant === "default" && c.role === role)!.key;

  it("a remote speaker comes with an enrollment token for admins and superadmins only; an operator's comes without", async () => {
    const got: Record<string, unknown> = {};
    for (const role of ["viewer", "operator", "admin", "superadmin"]) {
      const res = await t.call(byRole(role), {
        method: "POST",
        url: "/v1/speakers",
        payload: { name: `by-${role}`, router_id: "192.0.2.9", asn: 65009 },
      });
      got[role] = res.statusCode === 201 ? (res.json().enrollment_token === null ? "no token" : "token") : res.statusCode;
    }
    expect(got).toEqual({ viewer: 403, operator: "no token", admin: "token", superadmin: "token" });
  });

  it("a node key is rotated (to a new secret), changed and revoked from the admin role up", async () => {
    const created = await t.call(t.rootKey, { method: "POST", url: "/v1/speakers", payload: { name: "node-keys", router_id: "192.0.2.8", asn: 65008 } });
    const enrolled = await t.call(created.json().enrollment_token, { method: "POST", url: "/v1/nodes/enroll", payload: { hostname: "n", agent_version: "1" } });
    const secret = enrolled.json().api_key as string;
    const keys = (await t.call(t.rootKey, { method: "GET", url: "/v1/api-keys?role=node&limit=500" })).json().items;
    const id = keys.find((k: { key_prefix: string }) => secret.startsWith(`rlk_${k.key_prefix}_`)).id;
    const got: Record<string, number[]> = {};
    for (const role of ["viewer", "operator", "admin"]) {
      const key = byRole(role);
      got[role] = [
        (await t.call(key, { method: "POST", url: `/v1/api-keys/${id}/rotate`, payload: { grace_seconds: 60 } })).statusCode,
        (await t.call(key, { method: "PATCH", url: `/v1/api-keys/${id}`, payload: { name: `renamed by ${role}` } })).statusCode,
      ];
    }
    expect(got).toEqual({ viewer: [403, 403], operator: [403, 403], admin: [200, 200] });
    expect((await t.call(byRole("operator"), { method: "DELETE", url: `/v1/api-keys/${id}` })).statusCode).toBe(403);
    expect((await t.call(byRole("admin"), { method: "DELETE", url: `/v1/api-keys/${id}` })).statusCode).toBe(204);
  });
});
