import {
  type AgentNotification,
  type AgentServiceClient,
  type AgentServiceDefinition,
  announcementToProto,
  BUNDLE_CHUNK_MAX_BYTES,
  type BundleChunk,
  bearerMetadata,
  grpc,
  notificationFromProto,
  type StatusReport,
  statusReportToProto,
  type WatchEvent,
  type WatchRequest,
} from "@rlc/proto";
import { BundleReceiver, CURRENT_ANNOUNCEMENT, type ReceivedBundle } from "@rlc/shared/bundle";
import { backoffDelay, type Clock } from "@rlc/shared/time";
import { errorFields, type Logger } from "../log.js";
import { type Announcement, deltaBase, headCheckFor } from "./announcement.js";
import { EndpointRing } from "./endpoint-ring.js";
import type { FetchBundleOptions } from "./fetch-options.js";
import { ControllerError } from "./http-client.js";

export interface GrpcClientOptions {
  /**
   * `host:port`, or several (the replicas of one controller): calls go to one of them, and a
   * failure there (the Watch stream lost, UNAVAILABLE, a deadline) moves them to the next.
   */
  address: string | readonly string[];
  /** How the channel trusts the controller (pinning.ts); plaintext only with RL_INSECURE. */
  credentials: grpc.ChannelCredentials;
  nodeKey: string;
  speakerId: string;
  service: AgentServiceDefinition;
  clock: Clock;
  log: Logger;
  random?: () => number;
  /** Reconnect when nothing (not even a PING) came for this long. Default 90 s. */
  watchIdleMs?: number;
  /** Reconnect backoff. Default 1 s doubling to 30 s, with jitter. */
  backoff?: { baseMs: number; maxMs: number };
  /** Told the endpoint now in use after each move (for the agent's status). */
  onEndpoint?: (address: string) => void;
  /** What the agent announces on every call (announcement.ts); default this release's. */
  announcement?: Announcement;
}

/** How a bundle is fetched, whatever the transport. */
export interface WatchHandlers {
  onNotification(notification: AgentNotification): void;
  /** The stream is up (the controller's first message arrived): a moment to catch up. */
  onConnected(): void;
}

/**
 * Watch, GetBundle and ReportStatus for one speaker, with its node key on every call, to the
 * endpoint in use (one channel per endpoint, each connected when first used).
 */
export class AgentGrpcClient {
  readonly #clients = new Map<string, AgentServiceClient>();
  readonly #endpoints: EndpointRing;
  readonly #o: GrpcClientOptions;
  readonly #announced: Announcement;

  constructor(options: GrpcClientOptions) {
    this.#o = options;
    this.#announced = options.announcement === undefined ? CURRENT_ANNOUNCEMENT : options.announcement;
    const addresses = typeof options.address === "string" ? [options.address] : options.address;
    this.#endpoints = new EndpointRing(addresses, (from, to) => {
      options.log.warn("gRPC endpoint failed; moving to the next", { from, to });
      options.onEndpoint?.(to);
    });
    for (const address of addresses) this.#connect(address);
  }

  #connect(address: string): void {
    this.#clients.set(
      address,
      new this.#o.service.Client(address, this.#o.credentials, {
        // A bundle is megabytes: with HTTP/2's default 64 KiB window the controller waits for a
        // window update every 64 KiB; 4 MiB lets it send a bundle in a few turns.
        "grpc-node.flow_control_window": 4 * 1024 * 1024,
        // A connection of this client's own: one made again (#reconnect) is a new one, not the
        // process-wide pool's connection to the same address.
        "grpc.use_local_subchannel_pool": 1,
      }),
    );
  }

  /**
   * A call ran out its time, or a Watch stream went silent, on a connection that still answers
   * pings (so it is never dropped): its HTTP/2 streams can stall for good (no stream slot or no
   * window given back; seen with 200 agents, where every later call on it hung until its
   * deadline). The next call opens a new connection; what was in flight on the old one ends.
   */
  #reconnect(address: string): void {
    this.#clients.get(address)?.close();
    this.#connect(address);
  }

  /** The endpoint the next call goes to. */
  get endpoint(): string {
    return this.#endpoints.current;
  }

  #client(address: string): AgentServiceClient {
    return this.#clients.get(address)!;
  }

  /**
   * Holds a Watch stream open for as long as `stop` is not called: reconnects after an error,
   * an end or a silent stream, with backoff and jitter; the backoff starts over once a stream
   * delivered anything. `request` is read on every (re)connect.
   */
  watch(handlers: WatchHandlers, request: () => Promise<WatchRequest>): { stop(): Promise<void> } {
    const abort = new AbortController();
    const { clock, log } = this.#o;
    const backoff = this.#o.backoff ?? { baseMs: 1000, maxMs: 30_000 };
    const done = (async () => {
      let attempt = 0;
      while (!abort.signal.aborted) {
        const address = this.#endpoints.current;
        const outcome = await this.#watchOnce(address, handlers, await request(), abort.signal).catch((error: unknown) => ({ heard: false, error }));
        if (abort.signal.aborted) break;
        if (outcome.heard) attempt = 0;
        // Lost, ended or silent: that replica is gone or going; another may hold the stream. A
        // refusal (a revoked key, an unknown speaker) would be the same on every replica.
        if (outcome.error instanceof ControllerError && outcome.error.code === "controller_unreachable") this.#endpoints.failed(address);
        const wait = backoffDelay(attempt++, backoff, this.#o.random);
        log.warn("gRPC watch stream ended; reconnecting", { address, next: this.#endpoints.current, in_ms: wait, ...errorFields(outcome.error) });
        await clock.sleep(wait, abort.signal);
      }
    })();
    return {
      stop: async () => {
        abort.abort();
        await done;
      },
    };
  }

  #watchOnce(address: string, handlers: WatchHandlers, request: WatchRequest, signal: AbortSignal): Promise<{ heard: boolean; error: unknown }> {
    return new Promise((resolve) => {
      let heard = false;
      let silent = false;
      const call = this.#client(address).watch({ ...request, ...announcementToProto(this.#announced) }, bearerMetadata(this.#o.nodeKey));
      // Real timers: the watchdog measures silence on a socket, not the agent's clock.
      let idle: NodeJS.Timeout | undefined;
      const arm = () => {
        clearTimeout(idle);
        idle = setTimeout(() => {
          silent = true;
          call.cancel();
        }, this.#o.watchIdleMs ?? 90_000);
      };
      const onAbort = () => call.cancel();
      const connected = () => {
        if (heard) return;
        heard = true;
        this.#o.log.info("gRPC watch stream up", { address });
        handlers.onConnected();
      };
      const finish = (error: unknown) => {
        clearTimeout(idle);
        signal.removeEventListener("abort", onAbort);
        if (silent) this.#reconnect(address);
        resolve({ heard, error });
      };
      signal.addEventListener("abort", onAbort, { once: true });
      arm();
      call.on("metadata", connected);
      call.on("data", (event: WatchEvent) => {
        arm();
        connected();
        const notification = notificationFromProto(event);
        if (notification) handlers.onNotification(notification);
      });
      call.on("error", (error: grpc.ServiceError) => finish(mapGrpcError(error, "Watch")));
      call.on("end", () => finish(new ControllerError("controller_unreachable", "Watch: the controller ended the stream")));
    });
  }

  /**
   * The signed bundle via GetBundle, taken in by a {@link BundleReceiver} as its chunks come:
   * size checked against `maxBytes` at the first chunk, offsets on every one, the head handed
   * to `onHead` as soon as it is in (a throw there cancels the call and is what this rejects
   * with), and the sha256 of the whole, when the controller gives it (rl-bundle/1), compared at
   * the end; an rl-bundle/2 names the SHA-256 of each part in its signed header. With
   * `baseRevisionId` a delta from it may come.
   */
  fetchBundle(revisionId: number, options: FetchBundleOptions): Promise<ReceivedBundle> {
    const { maxBytes, timeoutMs = 300_000 } = options;
    const onHead = headCheckFor(this.#announced, options.onHead);
    return new Promise((resolve, reject) => {
      const request = {
        speaker_id: this.#o.speakerId,
        revision_id: revisionId,
        base_revision_id: deltaBase(this.#announced, options.baseRevisionId) ?? 0,
        ...announcementToProto(this.#announced),
      };
      const address = this.#endpoints.current;
      const call = this.#client(address).getBundle(request, bearerMetadata(this.#o.nodeKey), {
        deadline: Date.now() + timeoutMs,
      });
      let settled = false;
      let receiver: BundleReceiver | null = null;
      let total = 0;
      let sha256 = "";
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        call.cancel();
        reject(error);
      };
      call.on("data", (chunk: BundleChunk) => {
        if (settled) return;
        try {
          if (!receiver) {
            if (chunk.offset !== 0 || !(chunk.total_size > 0) || !/^(?:[0-9a-f]{64})?$/.test(chunk.sha256)) {
              return fail(new ControllerError("bad_response", "GetBundle: the first chunk lacks total_size or sha256"));
            }
            if (chunk.total_size > maxBytes) return fail(new ControllerError("too_large", `GetBundle: ${chunk.total_size} bytes, the cap is ${maxBytes}`));
            total = chunk.total_size;
            sha256 = chunk.sha256;
            receiver = new BundleReceiver({ expectedSize: total, maxBytes, onHead });
          }
          if (chunk.offset !== receiver.size || chunk.data.length > BUNDLE_CHUNK_MAX_BYTES || receiver.size + chunk.data.length > total) {
            return fail(
              new ControllerError("bad_response", `GetBundle: chunk at ${chunk.offset} (+${chunk.data.length}) after ${receiver.size} of ${total} bytes`),
            );
          }
          receiver.push(chunk.data);
        } catch (error) {
          // onHead refused the bundle: nothing more of it is worth receiving.
          fail(error as Error);
        }
      });
      call.on("error", (error: grpc.ServiceError) => {
        if (!settled) this.#unaryFailed(address, error);
        fail(mapGrpcError(error, "GetBundle"));
      });
      call.on("end", () => {
        if (settled) return;
        if (!receiver || receiver.size !== total) {
          return fail(new ControllerError("bad_response", `GetBundle: the stream ended after ${receiver?.size ?? 0} of ${total || "?"} bytes`));
        }
        const received = receiver.finish();
        if (sha256 && received.sha256 !== sha256) return fail(new ControllerError("bad_response", "GetBundle: sha256 does not match"));
        settled = true;
        resolve(received);
      });
    });
  }

  reportStatus(report: StatusReport, timeoutMs = 10_000): Promise<void> {
    const address = this.#endpoints.current;
    return new Promise((resolve, reject) => {
      this.#client(address).reportStatus(
        statusReportToProto(report, this.#announced),
        bearerMetadata(this.#o.nodeKey),
        { deadline: Date.now() + timeoutMs },
        (error) => {
          if (!error) return resolve();
          this.#unaryFailed(address, error);
          reject(mapGrpcError(error, "ReportStatus"));
        },
      );
    });
  }

  /**
   * A call that found no controller there, or none answering in time, moves the next calls to
   * another endpoint (this one falls back to HTTP); one that ran out its time leaves its
   * connection too. CANCELLED is the agent's own doing.
   */
  #unaryFailed(address: string, error: grpc.ServiceError): void {
    if (error.code === grpc.status.UNAVAILABLE || error.code === grpc.status.DEADLINE_EXCEEDED) this.#endpoints.failed(address);
    if (error.code === grpc.status.DEADLINE_EXCEEDED) this.#reconnect(address);
  }

  close(): void {
    for (const client of this.#clients.values()) client.close();
  }
}

function mapGrpcError(error: grpc.ServiceError, rpc: string): ControllerError {
  const message = `${rpc}: ${error.details || error.message}`;
  switch (error.code) {
    case grpc.status.UNAUTHENTICATED:
    case grpc.status.PERMISSION_DENIED:
      return new ControllerError("unauthenticated", message, { cause: error });
    case grpc.status.NOT_FOUND:
      return new ControllerError("not_found", message, { cause: error });
    case grpc.status.RESOURCE_EXHAUSTED:
      return new ControllerError("too_large", message, { cause: error });
    case grpc.status.UNAVAILABLE:
    case grpc.status.DEADLINE_EXCEEDED:
    case grpc.status.CANCELLED:
      return new ControllerError("controller_unreachable", message, { cause: error });
    default:
      return new ControllerError("controller_error", message, { cause: error });
  }
}
