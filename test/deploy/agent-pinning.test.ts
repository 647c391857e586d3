import { mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spkiHash } from "@rlc/shared";
import { createSystemClock } from "@rlc/shared/time";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { grpcCredentialsFor } from "../../packages/agent/src/agent.js";
import { AgentGrpcClient } from "../../packages/agent/src/bundle/grpc-client.js";
import { ControllerError } from "../../packages/agent/src/bundle/http-client.js";
import { fetchPinnedCa, pinnedGrpcCredentials } from "../../packages/agent/src/bundle/pinning.js";
import { loadConfig } from "../../packages/agent/src/config.js";
import { enroll } from "../../packages/agent/src/enroll.js";
import { silentLogger } from "../../packages/agent/src/log.js";
import { StateStore } from "../../packages/agent/src/state.js";
import { listenGrpc } from "../../packages/controller/src/grpc/server.js";
import { loadGrpcTls } from "../../packages/controller/src/grpc/tls.js";
import { createSecretBox } from "../../packages/controller/src/lib/secret-box.js";
import { loadAgentService } from "../../packages/proto/src/index.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";

// The agent trusts the controller the token names: over HTTPS and gRPC, a listener whose chain
// lacks the pinned CA (someone on the path with a certificate of their own) gets nothing — not
// the enrollment token, not the node key.

let t: LiveController;
let other: TestDatabase;
let otherSql: postgres.Sql;
let dir: string;
/** An HTTPS front for the controller's HTTP API, with the given certificate. */
const fronts: Server[] = [];
let seen: string[] = [];

async function httpsFront(tls: { cert: Buffer; key: Buffer }): Promise<string> {
  const server = createServer({ cert: tls.cert, key: tls.key }, async (req, res) => {
    seen.push(`${req.method} ${req.url}`);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const answer = await t.controller.app.inject({
      method: req.method as "POST",
      url: req.url!,
      headers: req.headers as Record<string, string>,
      payload: Buffer.concat(chunks),
    });
    res.writeHead(answer.statusCode, { "content-type": String(answer.headers["content-type"] ?? "application/json") });
    res.end(answer.rawPayload);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  fronts.push(server);
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const newToken = async () =>
  (
    await t.call(t.rootKey, "POST", "/v1/speakers", {
      name: `edge-${Math.random().toString(36).slice(2, 8)}`,
      mode: "remote",
      router_id: "192.0.2.1",
      asn: 65010,
    })
  ).json();
const stateIn = async (name: string) => {
  const s = new StateStore(join(dir, name));
  await s.init();
  return s;
};

beforeAll(async () => {
  t = await startLiveController();
  other = await createTestDatabase();
  otherSql = postgres(other.url, { max: 1, onnotice: () => {} });
  dir = mkdtempSync(join(tmpdir(), "rl-pin-"));
});
afterAll(async () => {
  for (const f of fronts) f.close();
  await t?.close();
  await otherSql?.end();
  await other?.drop();
  rmSync(dir, { recursive: true, force: true });
});

/** The controller's own TLS material, and another controller's (the impostor's). */
const material = async () => {
  const box = t.controller.deps.services.secretBox;
  const own = await loadGrpcTls({ sql: t.controller.db.sql, secretBox: box, files: null, names: [], now: new Date() });
  const impostor = await loadGrpcTls({ sql: otherSql as never, secretBox: createSecretBox(Buffer.alloc(32, 1)), files: null, names: [], now: new Date() });
  return { own, impostor };
};

describe("CA-pinned enrollment", () => {
  it("takes the CA from the controller's chain only when its hash is the pinned one", async () => {
    const { own } = await material();
    const ca = await fetchPinnedCa("127.0.0.1", t.controller.grpc!.port, own.caHash);
    expect(spkiHash(ca)).toBe(spkiHash(t.caPem!));
    expect(ca.replace(/\s+/g, "")).toBe(t.caPem!.replace(/\s+/g, ""));
    await expect(fetchPinnedCa("127.0.0.1", t.controller.grpc!.port, `sha256:${"0".repeat(64)}`)).rejects.toMatchObject({ code: "untrusted_controller" });
  });

  it("enrolls over HTTPS with the pinned CA and keeps it", async () => {
    const { own } = await material();
    const url = await httpsFront(own);
    const speaker = await newToken();
    const state = await stateIn("good");
    const node = await enroll({
      controllerUrl: url,
      insecure: false,
      state,
      token: speaker.enrollment_token,
      hostname: "r1",
      agentVersion: "1",
      now: Date.now,
    });
    expect(node.speaker_id).toBe(speaker.id);
    expect(spkiHash(node.controller_ca_pem!)).toBe(own.caHash);
    expect((await state.readNode())?.controller_ca_pem).toBe(node.controller_ca_pem);
  });

  it("refuses an HTTPS listener with another CA before sending the token (which stays valid)", async () => {
    const { impostor, own } = await material();
    const url = await httpsFront(impostor);
    const speaker = await newToken();
    seen = [];
    const error = await enroll({
      controllerUrl: url,
      insecure: false,
      state: await stateIn("mitm"),
      token: speaker.enrollment_token,
      hostname: "r1",
      agentVersion: "1",
      now: Date.now,
    }).catch((e) => e);
    expect(error).toBeInstanceOf(ControllerError);
    expect(error.code).toBe("untrusted_controller");
    expect(seen).toEqual([]);
    // The real controller still takes the token.
    const real = await httpsFront(own);
    const node = await enroll({
      controllerUrl: real,
      insecure: false,
      state: await stateIn("after-mitm"),
      token: speaker.enrollment_token,
      hostname: "r1",
      agentVersion: "1",
      now: Date.now,
    });
    expect(node.speaker_id).toBe(speaker.id);
  });

  it("refuses to enroll without a CA hash unless RL_INSECURE", async () => {
    const { own } = await material();
    const url = await httpsFront(own);
    const speaker = await newToken();
    const bare = (speaker.enrollment_token as string).split(".")[0]!;
    await expect(
      enroll({ controllerUrl: url, insecure: false, state: await stateIn("bare"), token: bare, hostname: "r1", agentVersion: "1", now: Date.now }),
    ).rejects.toMatchObject({
      code: "untrusted_controller",
    });
  });

  it("gRPC with the pinned CA reaches the controller and refuses a listener with another CA", async () => {
    const { impostor } = await material();
    const fake = await listenGrpc({ host: "127.0.0.1", port: 0, tls: { cert: impostor.cert, key: impostor.key } });
    const client = (address: string) =>
      new AgentGrpcClient({
        address,
        credentials: pinnedGrpcCredentials(t.caPem!),
        nodeKey: "rlk_AAAAAAAA_" + "x".repeat(43),
        speakerId: "s",
        service: loadAgentService(),
        clock: createSystemClock(),
        log: silentLogger,
      });
    const good = client(`127.0.0.1:${t.controller.grpc!.port}`);
    // The controller answers (it refuses the made-up key): the handshake went through.
    await expect(good.fetchBundle(1, { maxBytes: 1024, timeoutMs: 5000 })).rejects.toMatchObject({ code: "unauthenticated" });
    const bad = client(fake.address);
    await expect(bad.fetchBundle(1, { maxBytes: 1024, timeoutMs: 5000 })).rejects.toMatchObject({ code: "controller_unreachable" });
    good.close();
    bad.close();
    await fake.close(100);
  });
});

describe("plaintext only when asked", () => {
  const identity = { speaker_id: "s", tenant_id: "t", api_key: "k", grpc_endpoint: "127.0.0.1:1", nats_url: null, enrolled_at: "2026-01-01T00:00:00Z" };
  const secure = (c: unknown) => (c as { _isSecure(): boolean })._isSecure();

  it("gRPC is TLS unless RL_INSECURE=true; with a pin, only the pinned CA is used, and no gRPC until it is known", async () => {
    const base = loadConfig({});
    expect(secure(await grpcCredentialsFor(base, identity))).toBe(true);
    expect(secure(await grpcCredentialsFor({ ...base, insecure: true }, identity))).toBe(false);
    expect(await grpcCredentialsFor({ ...base, insecure: true }, { ...identity, ca_hash: `sha256:${"a".repeat(64)}` })).toBeNull();
    expect(secure(await grpcCredentialsFor({ ...base, insecure: true }, { ...identity, ca_hash: "x", controller_ca_pem: t.caPem }))).toBe(true);
  });
});
