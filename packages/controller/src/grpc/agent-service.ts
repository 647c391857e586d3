import { constants as http2 } from "node:http2";
import {
  type AgentServiceHandlers,
  BUNDLE_CHUNK_MAX_BYTES,
  type BundleChunk,
  bearerFromMetadata,
  grpc,
  internalSubjects,
  notificationFromJson,
  notificationToProto,
  signingKeyToProto,
  statusReportFromProto,
  type WatchEvent,
} from "@rlc/proto";
import { type AgentAnnouncement, announcementOf } from "@rlc/shared/bundle";
import { AppError, ForbiddenError, NotFoundError, UnauthenticatedError, ValidationError } from "@rlc/shared/errors";
import { EnrollBody, StatusReport } from "@rlc/shared/schemas";
import type { Clock } from "@rlc/shared/time";
import type { FastifyBaseLogger } from "fastify";
import type { Bus } from "../bus/index.js";
import type { Sql } from "../db/connect.js";
import { parseKeySecret } from "../lib/key-secret.js";
import type { Authenticator } from "../services/access/authenticator.js";
import type { Principal } from "../services/access/context.js";
import { type BundleLimiter, createBundleLimiter } from "../services/deploy/bundle-limiter.js";
import type { NodeService } from "../services/deploy/node.js";
import { createBuckets, createCounter, DEFAULT_GRPC_LIMITS, DeadlineError, type GrpcLimits, withDeadline } from "./limits.js";

/** What a request says the agent accepts (null: nothing, an agent of the release before announcements). */
const announcedIn = (request: { bundle_formats?: string[] | null; capabilities?: string[] | null }): AgentAnnouncement | null =>
  announcementOf(request.bundle_formats, request.capabilities);

export interface AgentServiceDeps {
  sql: Sql;
  bus: Bus;
  clock: Clock;
  node: NodeService;
  /** The HTTP path's cached key check, so an agent's calls cost no query per call. */
  authenticator: Authenticator;
  /** Overrides of {@link DEFAULT_GRPC_LIMITS} (tests make them small). */
  limits?: Partial<GrpcLimits>;
  /**
   * The places for bundle transfers, shared with the HTTP bundle route (the controller passes
   * the one its services hold); unset = one of this service's own, from `limits`.
   */
  bundles?: BundleLimiter;
  logger: Pick<FastifyBaseLogger, "error" | "warn" | "debug">;
  /** PING period on Watch streams. Default 25 s: the agent reconnects after 90 s of silence. */
  pingMs?: number;
  /** GetBundle chunk size (at most 1 MiB); tests make it small to see several chunks. */
  chunkBytes?: number;
}

const rateLimited = (detail: string) => new AppError("rate_limited", detail);

/** `ipv4:1.2.3.4:5678`, `1.2.3.4:5678`, `[::1]:5678` → the address without the port. */
const peerHost = (peer: string) =>
  peer
    .replace(/^ipv[46]:/, "")
    .replace(/:\d+$/, "")
    .replace(/^\[|\]$/g, "");

/**
 * Resets the HTTP/2 stream under a server call. A stream whose reader stopped reading cannot be
 * ended politely (its trailers wait behind the data it does not take); RST_STREAM frees what it
 * holds at once. grpc-js keeps the stream inside its call objects, hence the walk.
 */
function resetStream(call: object): boolean {
  let at: unknown = call;
  for (let depth = 0; depth < 6 && at && typeof at === "object"; depth++) {
    const o = at as { stream?: { close?: (code: number) => void; destroyed?: boolean }; call?: unknown; nextCall?: unknown };
    if (o.stream && typeof o.stream.close === "function") {
      if (!o.stream.destroyed) o.stream.close(http2.NGHTTP2_CANCEL);
      return true;
    }
    at = o.call ?? o.nextCall;
  }
  return false;
}

export interface AgentService {
  /** For `server.addService(service, handlers)`. */
  handlers: AgentServiceHandlers;
  /** Watch streams open right now (each holds one bus subscription). */
  openWatches(): number;
  /** Bundle transfers in flight right now (GetBundle streams, and HTTP downloads when the limiter is shared). */
  openBundles(): number;
  /** Bundle transfers waiting for a place right now. */
  waitingBundles(): number;
  /** Ends every Watch stream with OK, so a shutting-down server is not held open by them. */
  endWatches(): void;
}

/** Revision ids are PostgreSQL integers: a larger one names no revision. */
const MAX_REVISION_ID = 2_147_483_647;

/** PostgreSQL text and jsonb refuse NUL characters; a request carrying one is refused first. */
const hasNul = (value: unknown): boolean => {
  if (typeof value === "string") return value.includes("\0");
  if (Array.isArray(value)) return value.some(hasNul);
  return value !== null && typeof value === "object" && Object.values(value).some(hasNul);
};

const STATUS_OF: Partial<Record<AppError["code"], grpc.status>> = {
  unauthenticated: grpc.status.UNAUTHENTICATED,
  forbidden: grpc.status.PERMISSION_DENIED,
  not_found: grpc.status.NOT_FOUND,
  validation_failed: grpc.status.INVALID_ARGUMENT,
  invalid_json: grpc.status.INVALID_ARGUMENT,
  conflict: grpc.status.FAILED_PRECONDITION,
  payload_too_large: grpc.status.RESOURCE_EXHAUSTED,
  rate_limited: grpc.status.RESOURCE_EXHAUSTED,
  not_ready: grpc.status.UNAVAILABLE,
};

/**
 * AgentService (agent.proto) over the node service: each RPC authenticates the key in the
 * metadata, calls the same functions as the HTTP node routes and maps the answer. Watch adds the
 * stream's own concerns: the first event from the database, then the speaker's notifications
 * from the bus, and a PING to keep the stream (and proxies on its way) alive.
 */
export function createAgentService(deps: AgentServiceDeps): AgentService {
  const pingMs = deps.pingMs ?? 25_000;
  const limits: GrpcLimits = { ...DEFAULT_GRPC_LIMITS, ...deps.limits };
  const chunkBytes = Math.max(1, Math.min(deps.chunkBytes ?? limits.chunkBytes, BUNDLE_CHUNK_MAX_BYTES));
  const watches = new Set<grpc.ServerWritableStream<unknown, WatchEvent>>();
  const watchesByKey = createCounter(limits.watchesPerKey);
  const bundles = deps.bundles ?? createBundleLimiter(limits);
  const watchOpens = createBuckets(limits.watchOpens);
  const authFailures = createBuckets(limits.authFailures);

  /** AppErrors keep their meaning; anything else is a bug, logged here and answered INTERNAL. */
  const toServiceError = (error: unknown, rpc: string): Partial<grpc.StatusObject> => {
    if (error instanceof AppError) {
      const code = STATUS_OF[error.code];
      if (code !== undefined) return { code, details: error.message };
    }
    if (error instanceof DeadlineError) return { code: grpc.status.DEADLINE_EXCEEDED, details: error.message };
    deps.logger.error({ err: error, rpc }, "gRPC call failed");
    return { code: grpc.status.INTERNAL, details: "internal error" };
  };

  /**
   * The node key of the metadata; any other kind of key is refused (this service is the agents').
   * Failures are counted per peer address and per key prefix. Past the address's budget, calls
   * from there are refused before any lookup, so guessing keys costs the database nothing. The
   * prefix's budget is looked at only once a secret failed: a prefix is no secret (audit
   * summaries name it), so refusing on it before the check would let anyone who read it lock
   * the real agent out.
   */
  const nodePrincipal = async (call: { metadata: grpc.Metadata; getPeer(): string }): Promise<Principal & { speakerId: string }> => {
    const key = bearerFromMetadata(call.metadata);
    const peer = `peer:${peerHost(call.getPeer())}`;
    if (authFailures.empty(peer)) throw rateLimited("too many failed authentications; try again later");
    try {
      if (!key) throw new UnauthenticatedError("metadata authorization: Bearer <node key> is required");
      const principal = await deps.authenticator.authenticate(`Bearer ${key}`, new Date(deps.clock.now()));
      if (principal.role !== "node" || principal.speakerId === null) throw new ForbiddenError("AgentService takes node keys only");
      return principal as Principal & { speakerId: string };
    } catch (error) {
      if (error instanceof AppError && (error.code === "unauthenticated" || error.code === "forbidden")) {
        authFailures.take(peer);
        const prefix = key ? parseKeySecret(key)?.prefix : undefined;
        if (prefix && !authFailures.take(`key:${prefix}`)) throw rateLimited("too many failed authentications for this key; try again later");
      }
      throw error;
    }
  };

  /** A unary handler's answer within the deadline: the client's, capped by ours. */
  const unary = <T>(call: { getDeadline(): grpc.Deadline }, work: () => Promise<T>): Promise<T> => {
    const theirs = call.getDeadline();
    const theirMs = theirs instanceof Date ? theirs.getTime() - Date.now() : Number.isFinite(theirs) ? Number(theirs) - Date.now() : Number.POSITIVE_INFINITY;
    return withDeadline(work(), Math.max(1, Math.min(limits.unaryDeadlineMs, theirMs)));
  };

  /** An empty speaker_id means the key's own speaker; another speaker's is NOT_FOUND, as over HTTP. */
  const speakerOf = (principal: Principal & { speakerId: string }, requested: string): string => {
    const id = requested || principal.speakerId;
    if (id !== principal.speakerId) throw new NotFoundError("speaker", id);
    return id;
  };

  const handlers: AgentServiceHandlers = {
    Enroll(call, callback) {
      void unary(call, async () => {
        const body = EnrollBody.safeParse({
          hostname: call.request.hostname,
          agent_version: call.request.agent_version,
          ...(call.request.public_key ? { public_key: call.request.public_key } : {}),
        });
        if (!body.success) {
          throw new ValidationError(`invalid enrollment: ${body.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
        }
        if (hasNul(body.data)) throw new ValidationError("invalid enrollment: NUL characters are not allowed");
        const token = bearerFromMetadata(call.metadata);
        const answer = await deps.node.enroll(token ? `Bearer ${token}` : undefined, body.data, new Date(deps.clock.now()), announcedIn(call.request));
        return {
          speaker_id: answer.speaker_id,
          tenant_id: answer.tenant_id,
          api_key: answer.api_key,
          signing_keys: answer.signing_keys.map(signingKeyToProto),
          grpc_endpoint: answer.grpc_endpoint ?? "",
          nats_url: answer.nats_url ?? "",
          nats_credentials: answer.nats_credentials ?? "",
        };
      }).then(
        (answer) => callback(null, answer),
        (error: unknown) => callback(toServiceError(error, "Enroll")),
      );
    },

    Watch(call) {
      const stream = call as grpc.ServerWritableStream<unknown, WatchEvent>;
      let closed = false;
      let unsubscribe: (() => void) | null = null;
      let ping: NodeJS.Timeout | null = null;
      let release: (() => void) | null = null;
      const cleanup = () => {
        if (closed) return;
        closed = true;
        watches.delete(stream);
        release?.();
        if (ping) clearInterval(ping);
        try {
          unsubscribe?.();
        } catch {
          // the bus is closing: its subscriptions go with it
        }
      };
      // `on`, not `once`: cleanup runs once by itself, and each `once` costs a wrapper per stream.
      for (const event of ["cancelled", "close", "finish", "error"]) call.on(event, cleanup);
      const write = (event: WatchEvent) => {
        if (!closed && !call.cancelled && call.writable) call.write(event);
      };

      void (async () => {
        const principal = await nodePrincipal(call);
        if (!watchOpens.take(principal.keyId)) throw rateLimited("too many Watch opens for this key; try again later");
        release = watchesByKey.acquire(principal.keyId);
        if (!release) throw rateLimited(`this key holds ${limits.watchesPerKey} Watch streams already`);
        const speakerId = speakerOf(principal, call.request.speaker_id);
        await deps.node.speakerFor(principal, speakerId);
        const accepts = announcedIn(call.request);
        await deps.node.announced(deps.sql, principal, speakerId, accepts);
        if (closed || call.cancelled) return cleanup();
        // From here on, cleanup() (the agent went away) undoes what is set up below it.
        // Subscribed before the desired revision is read, so an apply committed in between is
        // not missed; what arrives meanwhile is held until the first event went out.
        let held: WatchEvent[] | null = [];
        unsubscribe = deps.bus.subscribe(internalSubjects.notify(principal.tenantId, speakerId), (message) => {
          const notification = notificationFromJson(message);
          if (!notification) return;
          const event = notificationToProto(notification, new Date(deps.clock.now()).toISOString());
          if (held) held.push(event);
          else write(event);
        });
        watches.add(stream);
        const latest = await deps.node.latest(principal, speakerId).catch((error: unknown) => {
          if (error instanceof NotFoundError) return null;
          throw error;
        });
        if (closed) return;
        const sentAt = new Date(deps.clock.now()).toISOString();
        write(
          latest
            ? notificationToProto(
                { type: "new_revision", speaker_id: speakerId, revision_id: latest.revision_id, digest: latest.digest, sequence: latest.sequence },
                sentAt,
              )
            : notificationToProto({ type: "ping" }, sentAt),
        );
        for (const event of held) write(event);
        held = null;
        ping = setInterval(() => {
          // A revoked key (speaker deleted, key rotated away) loses its stream at the next PING.
          nodePrincipal(call).then(
            () => write(notificationToProto({ type: "ping" }, new Date(deps.clock.now()).toISOString())),
            (error: unknown) => {
              if (error instanceof AppError && (error.code === "unauthenticated" || error.code === "forbidden")) fail(error);
              else write(notificationToProto({ type: "ping" }, new Date(deps.clock.now()).toISOString()));
            },
          );
        }, pingMs);
      })().catch((error: unknown) => fail(error));

      function fail(error: unknown) {
        cleanup();
        if (!call.cancelled && call.writable) call.emit("error", toServiceError(error, "Watch"));
      }
    },

    GetBundle(call) {
      let release: (() => void) | null = null;
      const ended = new Promise<void>((resolve) => {
        for (const event of ["cancelled", "close", "finish", "error"]) call.once(event, () => resolve());
      });
      let over = false;
      void ended.then(() => {
        over = true;
        release?.();
      });
      void (async () => {
        const principal = await nodePrincipal(call);
        const speakerId = speakerOf(principal, call.request.speaker_id);
        const revisionId = call.request.revision_id;
        if (!Number.isSafeInteger(revisionId) || revisionId < 1 || revisionId > MAX_REVISION_ID)
          throw new NotFoundError("bundle of revision", String(revisionId));
        const place = await bundles.acquire(principal.keyId, ended);
        if (!place.ok) {
          // The agent left while in line: nobody to answer.
          if (place.reason === "gone") return;
          throw rateLimited(
            place.reason === "key"
              ? `this key has ${bundles.limits.bundlesPerKey} bundle transfers in flight already`
              : "the controller serves too many bundles right now; try again later",
          );
        }
        release = place.release;
        // The agent may have left just as its place came: the place goes back.
        if (over || call.cancelled) return release();
        const base = call.request.base_revision_id ?? 0;
        const baseRevisionId = Number.isSafeInteger(base) && base > 0 && base <= MAX_REVISION_ID ? base : null;
        const reader = await deps.node.bundleReader(deps.sql, principal, speakerId, revisionId, baseRevisionId, announcedIn(call.request));
        // Read from storage one chunk at a time and sent at the pace the agent takes them: a
        // stream holds about one chunk, and one whose reader stops taking is cut after the idle
        // deadline rather than held open.
        let offset = 0;
        do {
          if (call.cancelled) return;
          const data = await reader.read(offset, chunkBytes);
          const first = offset === 0;
          const chunk: BundleChunk = {
            data,
            offset,
            total_size: first ? reader.size : 0,
            sha256: first ? (reader.sha256 ?? "") : "",
            revision_id: first ? revisionId : 0,
          };
          offset += data.length;
          if (!call.write(chunk)) {
            let idle: NodeJS.Timeout | undefined;
            const drained = await Promise.race([
              new Promise<boolean>((resolve) => call.once("drain", () => resolve(true))),
              ended.then(() => false),
              new Promise<boolean>((resolve) => {
                idle = setTimeout(() => resolve(false), limits.bundleIdleMs);
              }),
            ]);
            clearTimeout(idle);
            if (!drained) {
              if (!call.cancelled) resetStream(call);
              return;
            }
          }
          if (data.length === 0) break;
        } while (offset < reader.size);
        if (!call.cancelled) call.end();
      })().catch((error: unknown) => {
        release?.();
        if (!call.cancelled && call.writable) call.emit("error", toServiceError(error, "GetBundle"));
      });
    },

    ReportStatus(call, callback) {
      void unary(call, async () => {
        const principal = await nodePrincipal(call);
        const report = statusReportFromProto(call.request);
        const speakerId = speakerOf(principal, report.speaker_id);
        const parsed = StatusReport.safeParse({ ...report, speaker_id: speakerId });
        if (!parsed.success) {
          throw new ValidationError(`invalid report: ${parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; ")}`);
        }
        if ((report.applied_revision_id ?? 0) > MAX_REVISION_ID || (report.error?.revision_id ?? 0) > MAX_REVISION_ID) {
          throw new ValidationError("invalid report: a revision id above 2147483647 names no revision");
        }
        if (!Number.isSafeInteger(report.applied_sequence ?? 0)) throw new ValidationError("invalid report: applied_sequence is out of range");
        if (hasNul(report)) throw new ValidationError("invalid report: NUL characters are not allowed");
        await deps.node.report(principal, speakerId, parsed.data, new Date(deps.clock.now()), announcedIn(call.request));
      }).then(
        () => callback(null, {}),
        (error: unknown) => callback(toServiceError(error, "ReportStatus")),
      );
    },
  };

  return {
    handlers,
    openWatches: () => watches.size,
    openBundles: () => bundles.held(),
    waitingBundles: () => bundles.waiting(),
    endWatches() {
      for (const stream of [...watches]) stream.end();
    },
  };
}
