import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import {
  type AgentNotification,
  type AgentServiceHandlers,
  bearerFromMetadata,
  bundleChunks,
  grpc,
  loadAgentService,
  notificationToProto,
  type SigningKeyJson,
  type StatusReport,
  signingKeyToProto,
  statusReportFromProto,
  type WatchEvent,
} from "../../packages/proto/src/index.js";
import {
  type BundleContent,
  type BundlePayload,
  buildBundlePayload,
  type SigningKeyPair,
  signBundle,
  signingKeyFromSeed,
} from "../../packages/shared/src/bundle/index.js";
import { issueBundleV2 } from "./bundle-v2.js";

// A controller as the agent sees it, written for the agent's tests before the real one exists:
// the HTTP node routes (packages/agent/README.md) on node:http and AgentService
// (agent.proto) on grpc-js, serving bundles signed with the real signBundle. It keeps one
// speaker's desired revision in memory and records what the agent asks and reports.

export interface Issue {
  revision_id: number;
  digest: string;
  sequence: number;
  issued_at: string;
  bytes: Buffer;
  payload: BundlePayload;
}

export interface PublishOptions {
  /** Default: one above the last issued. */
  sequence?: number;
  expiresAt?: Date;
  issuedAt?: Date;
  /** Sign for another speaker or tenant than the agent's. */
  speakerId?: string;
  tenantId?: string;
  /** Flip one byte of the signed payload after signing. */
  tamper?: boolean;
  /** Store the bundle without telling the agent. */
  quiet?: boolean;
  /** An rl-bundle/2 (full section) instead of the rl-bundle/1 envelope; it expires in an hour. */
  v2?: boolean;
}

export interface ReceivedReport {
  via: "grpc" | "http";
  report: StatusReport;
}

export interface StandInController {
  url: string;
  grpcAddress: string;
  tenantId: string;
  speakerId: string;
  enrollmentToken: string;
  nodeKey: string;
  signingKey: SigningKeyPair;
  reports: ReceivedReport[];
  /** `METHOD path accept-encoding` of every HTTP request. */
  httpRequests: string[];
  grpcCalls: string[];
  /** Signs `content` as the controller would, makes it the desired revision and notifies Watch streams. */
  publish(content: BundleContent, options?: PublishOptions): Promise<Issue>;
  livePoll(pollId: string): void;
  /** Waits for a report that `match` accepts, among those received from index `from` on. */
  waitForReport(match: (r: StatusReport) => boolean, options?: { timeoutMs?: number; from?: number }): Promise<ReceivedReport>;
  stopGrpc(): Promise<void>;
  startGrpc(): Promise<void>;
  /** Gone from the network (true: gRPC stopped, HTTP connections cut) or back (false). */
  setOffline(offline: boolean): Promise<void>;
  close(): Promise<void>;
}

export async function startStandInController(options: { grpc?: boolean; seed?: number; natsUrl?: string } = {}): Promise<StandInController> {
  const signingKey = await signingKeyFromSeed(new Uint8Array(32).fill(options.seed ?? 7));
  const tenantId = "0192f3a4-0000-7000-8000-000000000001";
  const speakerId = "0192f3a4-0000-7000-8000-0000000000aa";
  const issues = new Map<number, Issue>();
  let desired: Issue | null = null;
  let lastSequence = 0;
  let enrollmentSpent = false;
  let offline = false;
  const watchers = new Set<grpc.ServerWritableStream<unknown, WatchEvent>>();
  const listedKey: SigningKeyJson = {
    key_id: signingKey.keyId,
    alg: "ed25519",
    public_key: Buffer.from(signingKey.publicKey).toString("base64"),
    status: "active",
    created_at: "2026-11-22T10:00:00.000Z",
    statement: null,
  };

  const self: StandInController = {
    url: "",
    grpcAddress: "",
    tenantId,
    speakerId,
    enrollmentToken: `rlk_enroll00_${"e".repeat(43)}`,
    nodeKey: `rlk_node0000_${"n".repeat(43)}`,
    signingKey,
    reports: [],
    httpRequests: [],
    grpcCalls: [],
    async publish(content, o = {}) {
      const sequence = o.sequence ?? lastSequence + 1;
      lastSequence = Math.max(lastSequence, sequence);
      const issuedAt = o.issuedAt ?? new Date();
      const payload = buildBundlePayload(
        { ...content, speaker_id: o.speakerId ?? speakerId, tenant_id: o.tenantId ?? tenantId },
        { sequence, issuedAt, expiresAt: o.expiresAt },
      );
      const signed = await signBundle(payload, signingKey.secretKey, signingKey.keyId);
      if (o.tamper) {
        const raw = Buffer.from(signed.payload, "base64");
        raw.writeUInt8((raw.at(-10) ?? 0) ^ 1, raw.length - 10);
        signed.payload = raw.toString("base64");
      }
      let issue: Issue = {
        revision_id: payload.revision_id,
        digest: payload.digest,
        sequence,
        issued_at: payload.issued_at,
        bytes: Buffer.from(JSON.stringify(signed)),
        payload,
      };
      if (o.v2) {
        const addressed = { ...content, speaker_id: o.speakerId ?? speakerId, tenant_id: o.tenantId ?? tenantId };
        const v2 = await issueBundleV2(addressed, { sequence, key: signingKey, tamper: o.tamper });
        issue = { ...issue, digest: v2.desired.digest, issued_at: v2.desired.issued_at ?? issue.issued_at, bytes: v2.bytes };
      }
      issues.set(issue.revision_id, issue);
      if (!o.quiet) {
        desired = issue;
        notify({ type: "new_revision", speaker_id: speakerId, revision_id: issue.revision_id, digest: issue.digest, sequence });
      }
      return issue;
    },
    livePoll(pollId) {
      notify({ type: "live_poll", poll_id: pollId });
    },
    async waitForReport(match, o = {}) {
      const deadline = Date.now() + (o.timeoutMs ?? 15_000);
      for (;;) {
        const found = self.reports.slice(o.from ?? 0).find((r) => match(r.report));
        if (found) return found;
        if (Date.now() > deadline)
          throw new Error(
            `no matching report; received: ${JSON.stringify(self.reports.map((r) => [r.via, r.report.reason, r.report.applied_revision_id, r.report.error?.code]))}`,
          );
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    stopGrpc: async () => {
      for (const w of watchers) w.destroy();
      watchers.clear();
      grpcServer?.forceShutdown();
      grpcServer = null;
    },
    startGrpc: async () => {
      grpcServer = await startGrpc(grpcPort);
    },
    async setOffline(value) {
      offline = value;
      if (value) {
        http.closeAllConnections();
        await self.stopGrpc();
      } else await self.startGrpc();
    },
    async close() {
      await self.stopGrpc();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };

  function notify(n: AgentNotification) {
    const event = notificationToProto(n, new Date().toISOString());
    for (const w of watchers) w.write(event);
  }

  function enrollAnswer() {
    return {
      speaker_id: speakerId,
      tenant_id: tenantId,
      api_key: self.nodeKey,
      signing_keys: [listedKey],
      grpc_endpoint: self.grpcAddress || null,
      nats_url: options.natsUrl ?? null,
    };
  }

  // ---- HTTP node routes ----
  const http: Server = createServer((req, res) => {
    handleHttp(req, res).catch((error: Error) => problem(res, 500, "internal", error.message));
  });
  async function handleHttp(req: IncomingMessage, res: ServerResponse) {
    if (offline) {
      req.socket.destroy();
      return;
    }
    const url = new URL(req.url ?? "/", "http://x");
    self.httpRequests.push(`${req.method} ${url.pathname} ${req.headers["accept-encoding"] ?? ""}`.trim());
    const bearer = /^Bearer (\S+)$/.exec(req.headers.authorization ?? "")?.[1];
    if (req.method === "POST" && url.pathname === "/v1/nodes/enroll") {
      if (bearer !== self.enrollmentToken || enrollmentSpent) return problem(res, 401, "unauthenticated", "unknown or spent enrollment token");
      enrollmentSpent = true;
      await body(req);
      return json(res, 201, enrollAnswer());
    }
    if (req.method === "GET" && url.pathname === "/v1/health") return json(res, 200, { status: "ok" });
    if (bearer !== self.nodeKey) return problem(res, 401, "unauthenticated", "unknown key");
    if (req.method === "GET" && url.pathname === "/v1/nodes/signing-keys") return json(res, 200, { keys: [listedKey] });
    const m = /^\/v1\/speakers\/([^/]+)\/(revisions\/latest|bundle\/(\d+)|status)$/.exec(url.pathname);
    if (!m || m[1] !== speakerId) return problem(res, 404, "not_found", "no such speaker");
    if (req.method === "GET" && m[2] === "revisions/latest") {
      if (!desired) return problem(res, 404, "not_found", "no desired revision");
      const { revision_id, digest, sequence, issued_at } = desired;
      return json(res, 200, { speaker_id: speakerId, revision_id, digest, sequence, issued_at, bundle_url: `/v1/speakers/${speakerId}/bundle/${revision_id}` });
    }
    if (req.method === "GET" && m[3]) {
      const issue = issues.get(Number(m[3]));
      if (!issue) return problem(res, 404, "not_found", "no such bundle");
      const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
      res.writeHead(200, { "content-type": "application/json", ...(gzip ? { "content-encoding": "gzip" } : {}) });
      return res.end(gzip ? gzipSync(issue.bytes) : issue.bytes);
    }
    if (req.method === "POST" && m[2] === "status") {
      self.reports.push({ via: "http", report: JSON.parse((await body(req)).toString("utf8")) as StatusReport });
      res.writeHead(204).end();
      return;
    }
    return problem(res, 405, "method_not_allowed", "no such route");
  }
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  self.url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;

  // ---- gRPC AgentService ----
  const { service } = loadAgentService();
  const denied = { code: grpc.status.UNAUTHENTICATED, details: "unknown key" } as grpc.ServiceError;
  const notFound = { code: grpc.status.NOT_FOUND, details: "no such speaker" } as grpc.ServiceError;
  const handlers: AgentServiceHandlers = {
    Enroll: (call, cb) => {
      self.grpcCalls.push("Enroll");
      if (bearerFromMetadata(call.metadata) !== self.enrollmentToken || enrollmentSpent) return cb(denied);
      enrollmentSpent = true;
      const a = enrollAnswer();
      cb(null, {
        ...a,
        grpc_endpoint: a.grpc_endpoint ?? "",
        nats_url: a.nats_url ?? "",
        nats_credentials: "",
        signing_keys: a.signing_keys.map(signingKeyToProto),
      });
    },
    Watch: (call) => {
      self.grpcCalls.push("Watch");
      if (bearerFromMetadata(call.metadata) !== self.nodeKey) return call.destroy(denied);
      watchers.add(call as grpc.ServerWritableStream<unknown, WatchEvent>);
      call.on("cancelled", () => watchers.delete(call as grpc.ServerWritableStream<unknown, WatchEvent>));
      call.on("close", () => watchers.delete(call as grpc.ServerWritableStream<unknown, WatchEvent>));
      if (desired) {
        const { revision_id, digest, sequence } = desired;
        call.write(notificationToProto({ type: "new_revision", speaker_id: speakerId, revision_id, digest, sequence }, new Date().toISOString()));
      } else call.write(notificationToProto({ type: "ping" }, new Date().toISOString()));
    },
    GetBundle: (call) => {
      self.grpcCalls.push(`GetBundle ${call.request.revision_id}`);
      if (bearerFromMetadata(call.metadata) !== self.nodeKey) return call.destroy(denied);
      if (call.request.speaker_id !== speakerId) return call.destroy(notFound);
      const issue = issues.get(call.request.revision_id);
      if (!issue) return call.destroy({ code: grpc.status.NOT_FOUND, details: "no such bundle" } as grpc.ServiceError);
      // Small chunks here, so the agent's reassembly is exercised on small bundles too.
      for (const chunk of bundleChunks(issue.bytes, issue.revision_id, 4096)) call.write(chunk);
      call.end();
    },
    ReportStatus: (call, cb) => {
      self.grpcCalls.push("ReportStatus");
      if (bearerFromMetadata(call.metadata) !== self.nodeKey) return cb(denied);
      self.reports.push({ via: "grpc", report: statusReportFromProto(call.request) });
      cb(null, {});
    },
  };
  /** Binds `port` (0 = a free one, then kept so a restart comes back where the agent looks). */
  async function startGrpc(port: number): Promise<grpc.Server> {
    const server = new grpc.Server();
    server.addService(service, handlers);
    grpcPort = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
    self.grpcAddress = `127.0.0.1:${grpcPort}`;
    return server;
  }
  let grpcPort = 0;
  let grpcServer: grpc.Server | null = options.grpc === false ? null : await startGrpc(0);
  return self;
}

function json(res: ServerResponse, status: number, value: unknown) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
}

function problem(res: ServerResponse, status: number, code: string, detail: string) {
  res.writeHead(status, { "content-type": "application/problem+json" }).end(JSON.stringify({ status, code, detail, title: code }));
}

async function body(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of req) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}
