import { createHash } from "node:crypto";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../packages/controller/src/db/connect.js";
import { createAgentService } from "../../packages/controller/src/grpc/agent-service.js";
import type { GrpcLimits } from "../../packages/controller/src/grpc/limits.js";
import { type ConnectionLimits, type GrpcListener, listenGrpc } from "../../packages/controller/src/grpc/server.js";
import { ENVELOPE_CHUNK_BYTES, sealEnvelope } from "../../packages/controller/src/lib/sealed-envelope.js";
import { createAuthenticator } from "../../packages/controller/src/services/access/authenticator.js";
import type { NodeService } from "../../packages/controller/src/services/deploy/node.js";
import { type AgentServiceClient, type BgpSessionLive, type BundleChunk, bearerMetadata, grpc } from "../../packages/proto/src/index.js";
import { agentClient, codeOf, reportStatus, watch } from "../helpers/agent-grpc.js";
import { type LiveController, startLiveController, until } from "../helpers/live-controller.js";

// What one node key (or one client) can hold of the agents' gRPC service: each limit is set
// small on a listener of its own, over the same controller and database.

let t: LiveController;
let speakerId: string;
let nodeKey: string;
let revisionId: number;
const emptyReport = {
  reason: "REPORT_REASON_SESSIONS_CHANGED",
  poll_id: "",
  applied_revision_id: 0,
  applied_sequence: 0,
  applied_digest: "",
  applied_at: "",
  error: null,
  bird: null,
  sessions: [] as BgpSessionLive[],
  agent_version: "1.0.0",
  reported_at: new Date().toISOString(),
} as const;
const open: { listener: GrpcListener; client: AgentServiceClient }[] = [];

async function serve(
  o: {
    limits?: Partial<GrpcLimits>;
    connection?: Partial<ConnectionLimits>;
    node?: Partial<NodeService>;
    sql?: Db;
    logger?: { error: (...a: unknown[]) => void };
    host?: string;
  } = {},
) {
  const d = t.controller.deps;
  const logger = { error: o.logger?.error ?? (() => undefined), warn: () => undefined, debug: () => undefined };
  const service = createAgentService({
    sql: d.sql,
    bus: d.bus,
    clock: d.clock,
    node: { ...d.services.node, ...o.node } as NodeService,
    // A TTL far past the test: it counts lookups of a cached key, not the renewal a slow machine would reach.
    authenticator: o.sql ? createAuthenticator({ sql: o.sql, ttlMs: 600_000 }) : d.services.authenticator,
    logger,
    ...(o.limits ? { limits: o.limits } : {}),
  });
  const listener = await listenGrpc({ host: o.host ?? "127.0.0.1", port: 0, tls: null, ...(o.connection ? { connection: o.connection } : {}) });
  listener.serve(service);
  const client = agentClient(listener.address);
  open.push({ listener, client });
  return { service, listener, client };
}

beforeAll(async () => {
  t = await startLiveController();
  const community = (await t.call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
  const mod = (await t.call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json();
  await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
  revisionId = (await t.call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
  const speaker = (await t.call(t.rootKey, "POST", "/v1/speakers", { name: "edge-1", mode: "remote", router_id: "192.0.2.1", asn: 65010 })).json();
  speakerId = speaker.id;
  nodeKey = (await t.call(speaker.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "r1", agent_version: "1.0.0" })).json().api_key;
  await t.call(t.rootKey, "POST", "/v1/apply", { speaker_ids: [speakerId], timeout_seconds: 5 });
  await until("the bundle", async () => (await t.call(nodeKey, "GET", `/v1/speakers/${speakerId}/revisions/latest`)).statusCode === 200);
  // A body far larger than the flow-control windows, so a reader that stops reading stalls the sender.
  // Stored sealed, as the controller stores every bundle, and whole in the row (a format-1 row).
  const body = Buffer.alloc(8 * 1024 * 1024, 7);
  const sealed = await sealEnvelope(t.controller.deps.services.secretBox, body, ENVELOPE_CHUNK_BYTES);
  await t.controller.db.sql`UPDATE bundles SET envelope = ${sealed}, envelope_sealed = true, envelope_chunk = ${ENVELOPE_CHUNK_BYTES},
    envelope_size = ${body.length}, envelope_sha256 = ${createHash("sha256").update(body).digest("hex")},
    format = 1, delta_base_revision_id = NULL, delta_head = NULL WHERE speaker_id = ${speakerId}`;
});

afterAll(async () => {
  for (const o of open) {
    o.client.close();
    await o.listener.close(100);
  }
  await t?.close();
});

describe("gRPC limits per key", () => {
  it("a key holds at most `watchesPerKey` Watch streams; a closed one frees its place", async () => {
    const { client, service } = await serve({ limits: { watchesPerKey: 2 } });
    const a = watch(client, nodeKey);
    const b = watch(client, nodeKey);
    await a.next(() => true);
    await b.next(() => true);
    expect((await watch(client, nodeKey).ended).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    a.cancel();
    await until("the stream to be let go", async () => service.openWatches() === 1, 5000, 20);
    const c = watch(client, nodeKey);
    await c.next(() => true);
    b.cancel();
    c.cancel();
  });

  it("Watch opens per key are rate limited", async () => {
    const { client } = await serve({ limits: { watchOpens: { burst: 3, everyMs: 60_000 } } });
    for (let i = 0; i < 3; i++) {
      const w = watch(client, nodeKey);
      await w.next(() => true);
      w.cancel();
    }
    expect((await watch(client, nodeKey).ended).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });

  it("failed authentications are budgeted per client: past it, calls are refused without a lookup", async () => {
    let lookups = 0;
    const counting = ((...args: unknown[]) => {
      lookups++;
      return (t.controller.deps.sql as unknown as (...a: unknown[]) => unknown)(...args);
    }) as unknown as Db;
    const { client } = await serve({ sql: counting, limits: { authFailures: { burst: 3, everyMs: 60_000 } } });
    const random = () => `rlk_${Math.random().toString(36).slice(2, 10).padEnd(8, "x")}_${"y".repeat(43)}`;
    for (let i = 0; i < 3; i++) expect(await codeOf(reportStatus(client, random(), { speaker_id: speakerId }))).toBe(grpc.status.UNAUTHENTICATED);
    const before = lookups;
    for (let i = 0; i < 20; i++) expect(await codeOf(reportStatus(client, random(), { speaker_id: speakerId }))).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(lookups).toBe(before);
  });

  it("failures with a node key's prefix and a wrong secret, from elsewhere, do not lock the real agent out", async () => {
    // Listening on every address: the guesser comes over IPv4, the agent over IPv6 (another peer address).
    const { listener } = await serve({ host: "::", limits: { authFailures: { burst: 3, everyMs: 60_000 } } });
    const port = listener.address.split(":").pop();
    const guesser = agentClient(`127.0.0.1:${port}`);
    const agent = agentClient(`[::1]:${port}`);
    // `rlk_<prefix>_`: the real key's prefix, with a secret that is not its own.
    const guess = `${nodeKey.slice(0, 13)}${"z".repeat(43)}`;
    try {
      const codes = [];
      for (let i = 0; i < 6; i++) codes.push(await codeOf(reportStatus(guesser, guess, { speaker_id: speakerId })));
      expect(codes.slice(0, 2)).toEqual([grpc.status.UNAUTHENTICATED, grpc.status.UNAUTHENTICATED]);
      expect(codes.at(-1)).toBe(grpc.status.RESOURCE_EXHAUSTED);
      await expect(reportStatus(agent, nodeKey, { speaker_id: speakerId })).resolves.toBeUndefined();
    } finally {
      guesser.close();
      agent.close();
    }
  });

  it("node keys are checked through the cached authenticator: repeated calls cost one lookup", async () => {
    let lookups = 0;
    const counting = ((...args: unknown[]) => {
      lookups++;
      return (t.controller.deps.sql as unknown as (...a: unknown[]) => unknown)(...args);
    }) as unknown as Db;
    const { client } = await serve({ sql: counting });
    for (let i = 0; i < 10; i++) await reportStatus(client, nodeKey, { speaker_id: speakerId });
    // One key lookup (and at most one last-used update) for ten calls.
    expect(lookups).toBeGreaterThanOrEqual(1);
    expect(lookups).toBeLessThanOrEqual(2);
  });
});

describe("GetBundle under pressure", () => {
  it("a stream whose reader stops is cut after the idle deadline and frees the key's place", async () => {
    const { client, service } = await serve({ limits: { bundlesPerKey: 1, bundleIdleMs: 400, chunkBytes: 64 * 1024 } });
    const call = client.getBundle({ speaker_id: speakerId, revision_id: revisionId }, bearerMetadata(nodeKey));
    let received = 0;
    const status = new Promise<grpc.StatusObject>((resolve) => {
      call.on("status", resolve);
      call.on("error", () => undefined);
    });
    await new Promise<void>((resolve) =>
      call.once("data", (c: BundleChunk) => {
        received += c.data.length;
        call.pause();
        resolve();
      }),
    );
    // While it is held, the key has no second stream.
    const second = client.getBundle({ speaker_id: speakerId, revision_id: revisionId }, bearerMetadata(nodeKey));
    const secondStatus = await new Promise<grpc.StatusObject>((resolve) => {
      second.on("status", resolve);
      second.on("error", () => undefined);
      second.on("data", () => undefined);
    });
    expect(secondStatus.code).toBe(grpc.status.RESOURCE_EXHAUSTED);

    // The controller lets go of it although the reader never resumes.
    await until("the paused stream to be cut", async () => service.openBundles() === 0, 5000, 20);
    expect(received).toBeLessThan(8 * 1024 * 1024);
    call.resume();
    expect((await status).code).not.toBe(grpc.status.OK);

    const third = await new Promise<number>((resolve, reject) => {
      let size = 0;
      const c = client.getBundle({ speaker_id: speakerId, revision_id: revisionId }, bearerMetadata(nodeKey));
      c.on("data", (chunk: BundleChunk) => {
        size += chunk.data.length;
      });
      c.on("end", () => resolve(size));
      c.on("error", reject);
    });
    expect(third).toBe(8 * 1024 * 1024);
  });
});

describe("GetBundle in line", () => {
  it("past the replica's cap a stream waits for a place instead of being refused; only past the line is one refused", async () => {
    const { client, service } = await serve({ limits: { bundlesTotal: 1, bundlesWaiting: 1, bundlesPerKey: 4, bundleIdleMs: 400, chunkBytes: 64 * 1024 } });
    const fetch = () => client.getBundle({ speaker_id: speakerId, revision_id: revisionId }, bearerMetadata(nodeKey));
    const whole = (c: ReturnType<typeof fetch>) =>
      new Promise<number>((resolve, reject) => {
        let size = 0;
        c.on("data", (chunk: BundleChunk) => {
          size += chunk.data.length;
        });
        c.on("end", () => resolve(size));
        c.on("error", reject);
      });
    // The one place, held by a reader that stops taking (cut after the idle deadline).
    const first = fetch();
    first.on("error", () => undefined);
    await new Promise<void>((resolve) => first.once("data", () => resolve(first.pause() && undefined)));
    const second = fetch();
    const secondWhole = whole(second);
    await until("the second stream to wait in line", async () => service.waitingBundles() === 1, 5000, 20);
    // The line holds one: a third stream is refused at once.
    const third = fetch();
    third.on("data", () => undefined);
    const thirdStatus = await new Promise<grpc.StatusObject>((resolve) => {
      third.on("status", resolve);
      third.on("error", () => undefined);
    });
    expect(thirdStatus.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    // The waiting one gets the place once the first lets go of it, and all of its bundle.
    expect(await secondWhole).toBe(8 * 1024 * 1024);
  });
});

describe("unary calls and reports", () => {
  it("a unary call that does not answer in time ends DEADLINE_EXCEEDED", async () => {
    const { client } = await serve({ limits: { unaryDeadlineMs: 300 }, node: { report: () => new Promise<never>(() => undefined) } });
    // The client would wait a minute: the controller's own deadline answers first.
    const error = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.reportStatus({ ...emptyReport, speaker_id: speakerId }, bearerMetadata(nodeKey), { deadline: Date.now() + 60_000 }, (e) => resolve(e)),
    );
    expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(error?.details).toMatch(/no answer within 300 ms/);
  });

  it("a report with a bad applied_at is INVALID_ARGUMENT and logs no error", async () => {
    const errors: unknown[] = [];
    const { client } = await serve({ logger: { error: (...a) => errors.push(a) } });
    expect(await codeOf(reportStatus(client, nodeKey, { speaker_id: speakerId, applied_at: "not-a-date" }))).toBe(grpc.status.INVALID_ARGUMENT);
    expect(errors).toEqual([]);
  });

  it("a report above 1 MiB is refused (RESOURCE_EXHAUSTED), as over HTTP", async () => {
    const { client } = await serve();
    const big = "x".repeat(1100 * 1024);
    expect(await codeOf(reportStatus(client, nodeKey, { speaker_id: speakerId, agent_version: big }))).toBe(grpc.status.RESOURCE_EXHAUSTED);
  });
});

describe("the desired revision", () => {
  it("revisions/latest (and so Watch's first event) is answered without reading the bundle body", async () => {
    const columns = new Set<string>();
    const sql = t.controller.deps.sql as unknown as (...a: unknown[]) => PromiseLike<unknown>;
    // Every query's rows pass by here; the test notes which columns came back.
    const recording = new Proxy(sql, {
      apply(target, self, args) {
        const query = Reflect.apply(target, self, args) as PromiseLike<unknown> & object;
        return new Proxy(query, {
          get(q, p) {
            if (p !== "then") {
              const v = Reflect.get(q, p, q);
              return typeof v === "function" ? v.bind(q) : v;
            }
            return (ok: (v: unknown) => unknown, fail: (e: unknown) => unknown) =>
              q
                .then((rows) => {
                  if (Array.isArray(rows)) for (const row of rows) for (const k of Object.keys(row as object)) columns.add(k);
                  return rows;
                })
                .then(ok, fail);
          },
        });
      },
    }) as unknown as Db;
    const speaker = (await t.call(t.rootKey, "GET", `/v1/speakers/${speakerId}`)).json();
    const principal = {
      tenantId: speaker.tenant_id ?? (await t.call(nodeKey, "GET", "/v1/auth/session")).json().tenant_id,
      tenantName: "default",
      role: "node" as const,
      keyId: "k",
      keyPrefix: "p",
      speakerId,
    };
    const latest = await t.controller.deps.services.node.latest(principal as never, speakerId, recording);
    expect(latest).toMatchObject({ revision_id: revisionId, digest: expect.stringMatching(/^sha256:/) });
    expect(columns.has("digest")).toBe(true);
    expect(columns.has("envelope")).toBe(false);
  });
});

describe("connections", () => {
  it("one client address holds at most `perAddress` connections; more are closed at once", async () => {
    const { listener } = await serve({ connection: { perAddress: 3, handshakeMs: 60_000 } });
    const sockets = [0, 1, 2, 3].map(() => connect(listener.port, "127.0.0.1"));
    const closedSoon = (s: ReturnType<typeof connect>) =>
      Promise.race([new Promise<boolean>((r) => s.once("close", () => r(true))), new Promise<boolean>((r) => setTimeout(() => r(false), 1500))]);
    for (const s of sockets) s.resume();
    const closed = await Promise.all(sockets.map(closedSoon));
    expect(closed.filter(Boolean)).toHaveLength(1);
    for (const s of sockets) s.destroy();
  });

  it("a TCP connection that sends nothing is closed", async () => {
    const { listener } = await serve({ connection: { handshakeMs: 300 } });
    const socket = connect(listener.port, "127.0.0.1");
    socket.resume(); // reads what the server sends (its SETTINGS), so its close is seen
    const closed = await Promise.race([
      new Promise<boolean>((resolve) => socket.once("close", () => resolve(true))),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000)),
    ]);
    socket.destroy();
    expect(closed).toBe(true);
  });
});
