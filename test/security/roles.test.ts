import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mintApiKey } from "../../packages/controller/src/services/access/api-keys.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { fill, type Operation, operationsOf, ROLE_RANK } from "./operations.js";

// The role × operation matrix, generated from the OpenAPI document: each operation declares
// its minimum role (`x-min-role`, `x-node-key`, `x-deployment`), and every kind of key gets
// exactly that: 403 `forbidden` below it, anything but 401/403 at or above it.

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

beforeAll(async () => {
  t = await startTestController({ env: { GRPC_PORT: "0" } });
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
  callers = [
    { name: "viewer", role: "viewer", tenant: "default", key: await mint("viewer") },
    { name: "operator", role: "operator", tenant: "default", key: await mint("operator") },
    { name: "admin", role: "admin", tenant: "default", key: await mint("admin") },
    { name: "node", role: "node", tenant: "default", key: enrolled.json().api_key },
    { name: "superadmin of another tenant", role: "superadmin", tenant: "matrix-other", key: otherRoot.secret },
    { name: "superadmin", role: "superadmin", tenant: "default", key: t.rootKey },
  ];
});
afterAll(async () => t?.close());

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
