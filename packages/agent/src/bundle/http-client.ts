import type { SigningKeyJson, StatusReport } from "@rlc/proto";
import { announcementHeaders, BundleError, BundleReceiver, CURRENT_ANNOUNCEMENT, type ReceivedBundle } from "@rlc/shared/bundle";
import { z } from "zod";
import { type Announcement, deltaBase, headCheckFor } from "./announcement.js";
import { EndpointRing } from "./endpoint-ring.js";
import type { FetchBundleOptions } from "./fetch-options.js";

/** The speaker's desired revision, as a notification or `revisions/latest` names it. */
export interface DesiredRevision {
  revision_id: number;
  digest: string;
  /** The issued bundle's sequence, when the source says it; tells a re-issue apart. */
  sequence: number | null;
  issued_at: string | null;
}

export interface EnrollResult {
  speaker_id: string;
  tenant_id: string;
  api_key: string;
  signing_keys: SigningKeyJson[];
  grpc_endpoint: string | null;
  nats_url: string | null;
  /** The agent's own NATS user (`.creds` text); null when the controller mints none. */
  nats_credentials: string | null;
}

export type ControllerErrorCode =
  | "untrusted_controller"
  | "controller_unreachable"
  | "unauthenticated"
  | "not_found"
  | "controller_error"
  | "controller_busy"
  | "bad_response"
  | "too_large";

/** The controller could not be asked, or answered something the agent cannot use. */
export class ControllerError extends Error {
  override name = "ControllerError";
  readonly code: ControllerErrorCode;
  /** HTTP status, or null when no answer came. */
  readonly status: number | null;

  constructor(code: ControllerErrorCode, message: string, options: { status?: number; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.code = code;
    this.status = options.status ?? null;
  }
}

/** Absent or null, read as null. */
const orNull = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? null);
/** Absent, null or empty, read as null. */
const textOrNull = () =>
  z
    .string()
    .nullish()
    .transform((v) => v || null);

const KeySchema = z.object({
  key_id: z.string(),
  alg: z.string(),
  public_key: z.string(),
  status: z.enum(["active", "retired"]),
  created_at: orNull(z.string()),
  statement: orNull(z.unknown()),
});
const EnrollSchema = z.object({
  speaker_id: z.string().min(1),
  tenant_id: z.string().min(1),
  api_key: z.string().min(1),
  signing_keys: z.array(KeySchema).min(1),
  grpc_endpoint: textOrNull(),
  nats_url: textOrNull(),
  nats_credentials: textOrNull(),
});
const LatestSchema = z.object({
  revision_id: z.number().int().positive(),
  digest: z.string(),
  sequence: orNull(z.number().int().positive()),
  issued_at: orNull(z.string()),
});
const KeysSchema = z.object({ keys: z.array(KeySchema) });

export interface HttpClientOptions {
  /**
   * The controller's HTTP base, e.g. `https://controller.example.net`, or several (its
   * replicas): requests go to one, and one that reaches no controller there is sent to the next.
   */
  baseUrl: string | readonly string[];
  /** The node key; null before enrollment. */
  nodeKey: string | null;
  /** Per request. Default 30 s; a bundle download gets `bundleTimeoutMs`. */
  timeoutMs?: number;
  /** Default 5 minutes: a million-prefix bundle is tens of MiB. */
  bundleTimeoutMs?: number;
  fetch?: typeof fetch;
  /**
   * A 429 or 503 answer (the controller's limits: say, this key's bundle transfers in flight)
   * is asked again after its Retry-After, this many times (default 3), before the call fails
   * with `controller_busy`.
   */
  busyRetries?: number;
  /** The longest Retry-After waited for; default 30 s. */
  maxRetryAfterMs?: number;
  /** How a Retry-After is waited for (tests pass their own). */
  sleep?: (ms: number) => Promise<void>;
  /** Jitter of the waits, in [0, 1); default Math.random. */
  random?: () => number;
  /** Told of each move to another base (for the log and the agent's status). */
  onMove?: (from: string, to: string) => void;
  /** What the agent announces, in headers on every request (announcement.ts); default this release's. */
  announcement?: Announcement;
}

/**
 * The wait a Retry-After asks for (seconds or an HTTP date), capped, plus up to a quarter more
 * so that agents refused together do not come back together; 1 s when it says nothing usable.
 */
export function retryAfterMs(header: string | null, o: { maxMs: number; random: () => number; now?: number }): number {
  const value = header?.trim() ?? "";
  let ms = 1000;
  if (/^\d+$/.test(value)) ms = Number(value) * 1000;
  else if (value && !Number.isNaN(Date.parse(value))) ms = Date.parse(value) - (o.now ?? Date.now());
  const base = Math.min(Math.max(ms, 0), o.maxMs);
  return Math.round(base * (1 + o.random() / 4));
}

/** The HTTP node routes, and `POST /v1/speakers/{id}/status` (agent README). */
export class ControllerHttpClient {
  readonly #bases: EndpointRing;
  readonly #key: string | null;
  readonly #timeoutMs: number;
  readonly #bundleTimeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #busyRetries: number;
  readonly #maxRetryAfterMs: number;
  readonly #sleep: (ms: number) => Promise<void>;
  readonly #random: () => number;
  readonly #announced: Announcement;

  constructor(options: HttpClientOptions) {
    this.#announced = options.announcement === undefined ? CURRENT_ANNOUNCEMENT : options.announcement;
    const bases = typeof options.baseUrl === "string" ? [options.baseUrl] : options.baseUrl;
    this.#bases = new EndpointRing(
      bases.map((b) => b.replace(/\/+$/, "")),
      options.onMove,
    );
    this.#key = options.nodeKey;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#bundleTimeoutMs = options.bundleTimeoutMs ?? 300_000;
    this.#fetch = options.fetch ?? fetch;
    this.#busyRetries = options.busyRetries ?? 3;
    this.#maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
    this.#random = options.random ?? Math.random;
  }

  /** The base the next request goes to. */
  get endpoint(): string {
    return this.#bases.current;
  }

  /** `POST /v1/nodes/enroll` with the one-time token as Bearer. */
  async enroll(token: string, body: { hostname: string; agent_version: string }): Promise<EnrollResult> {
    const res = await this.#request("POST", "/v1/nodes/enroll", { token, body });
    return parse(EnrollSchema, await readJson(res, 1024 * 1024), "enrollment answer");
  }

  /** `GET /v1/speakers/{id}/revisions/latest`; null when the speaker has no desired revision. */
  async latest(speakerId: string): Promise<DesiredRevision | null> {
    const res = await this.#request("GET", `/v1/speakers/${encodeURIComponent(speakerId)}/revisions/latest`, { allow404: true });
    if (res.status === 404) {
      await res.body?.cancel();
      return null;
    }
    return parse(LatestSchema, await readJson(res, 64 * 1024), "revisions/latest answer");
  }

  /** `GET /v1/speakers/{id}/bundle/{revision_id}`, gzip welcome; taken in by a BundleReceiver, capped. */
  async fetchBundle(speakerId: string, revisionId: number, options: Omit<FetchBundleOptions, "timeoutMs">): Promise<ReceivedBundle> {
    const base = deltaBase(this.#announced, options.baseRevisionId);
    const query = base ? `?base_revision=${base}` : "";
    const path = `/v1/speakers/${encodeURIComponent(speakerId)}/bundle/${revisionId}${query}`;
    const res = await this.#request("GET", path, { headers: { "accept-encoding": "gzip" }, timeoutMs: this.#bundleTimeoutMs });
    return receiveBundle(res, options.maxBytes, headCheckFor(this.#announced, options.onHead));
  }

  /** `GET /v1/nodes/signing-keys`. */
  async signingKeys(): Promise<SigningKeyJson[]> {
    const res = await this.#request("GET", "/v1/nodes/signing-keys", {});
    return parse(KeysSchema, await readJson(res, 1024 * 1024), "signing-keys answer").keys;
  }

  /**
   * `GET /v1/health`: one round trip on the management path, for the probation's controller
   * check. Any 2xx answer counts; a proxy's 502/503 does not.
   */
  async health(timeoutMs: number): Promise<void> {
    // Asked once: the probation wants to know whether the controller answers now.
    const res = await this.#request("GET", "/v1/health", { timeoutMs, once: true });
    await res.body?.cancel();
  }

  /** `POST /v1/speakers/{id}/status`: the fallback when ReportStatus over gRPC fails. */
  async reportStatus(report: StatusReport): Promise<void> {
    const res = await this.#request("POST", `/v1/speakers/${encodeURIComponent(report.speaker_id)}/status`, { body: report });
    await res.body?.cancel();
  }

  async #request(
    method: string,
    path: string,
    o: { token?: string; body?: unknown; headers?: Record<string, string>; allow404?: boolean; timeoutMs?: number; once?: boolean },
  ): Promise<Response> {
    const key = o.token ?? this.#key;
    const headers: Record<string, string> = { accept: "application/json", ...announcementHeaders(this.#announced), ...o.headers };
    if (key) headers.authorization = `Bearer ${key}`;
    if (o.body !== undefined) headers["content-type"] = "application/json";
    // Each base is tried at most once per request: a replica that is gone refuses at once, so
    // the next one answers in the same call.
    let unreached = 0;
    let busyWaits = 0;
    for (;;) {
      let res: Response;
      const base = this.#bases.current;
      try {
        res = await this.#fetch(base + path, {
          method,
          headers,
          body: o.body === undefined ? undefined : JSON.stringify(o.body),
          signal: AbortSignal.timeout(o.timeoutMs ?? this.#timeoutMs),
          redirect: "error",
        });
      } catch (cause) {
        this.#bases.failed(base);
        if (++unreached < this.#bases.size) continue;
        throw new ControllerError("controller_unreachable", `${method} ${path}: ${(cause as Error).message}`, { cause });
      }
      if (res.ok || (o.allow404 && res.status === 404)) return res;
      const busy = res.status === 429 || res.status === 503;
      // The controller's limits say "later", not "no": wait as it asks, then ask again.
      if (busy && !o.once && busyWaits < this.#busyRetries) {
        busyWaits += 1;
        await res.body?.cancel();
        await this.#sleep(retryAfterMs(res.headers.get("retry-after"), { maxMs: this.#maxRetryAfterMs, random: this.#random }));
        continue;
      }
      const problem = (await readJson(res, 64 * 1024).catch(() => null)) as { code?: unknown; detail?: unknown } | null;
      const detail = [problem?.code, problem?.detail].filter((v) => typeof v === "string").join(": ") || res.statusText;
      const code =
        res.status === 401 || res.status === 403 ? "unauthenticated" : res.status === 404 ? "not_found" : busy ? "controller_busy" : "controller_error";
      throw new ControllerError(code, `${method} ${path}: ${res.status} ${detail}`, { status: res.status });
    }
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ControllerError("bad_response", `${what}: ${issue?.path.join(".") || "body"} ${issue?.message}`);
  }
  return parsed.data;
}

async function readJson(res: Response, maxBytes: number): Promise<unknown> {
  const parts: Uint8Array[] = [];
  const size = await readCapped(res, maxBytes, (chunk) => parts.push(chunk));
  try {
    return JSON.parse(Buffer.concat(parts, size).toString("utf8"));
  } catch (cause) {
    throw new ControllerError("bad_response", `${res.url}: the answer is not JSON`, { status: res.status, cause });
  }
}

/** A bundle's body through a BundleReceiver: its head checked by `onHead` as soon as it is in, its parts hashed as they come. */
async function receiveBundle(res: Response, maxBytes: number, onHead: FetchBundleOptions["onHead"]): Promise<ReceivedBundle> {
  const receiver = new BundleReceiver({ maxBytes, onHead });
  await readCapped(res, maxBytes, (chunk) => receiver.push(chunk));
  return receiver.finish();
}

/**
 * The body, decompressed by fetch, chunk by chunk to `take`: refused as soon as it passes
 * `maxBytes` (a gzip bomb too). Answers its size. What `take` throws (a bundle's refused head)
 * stops the reading and is what this throws.
 */
async function readCapped(res: Response, maxBytes: number, take: (chunk: Uint8Array) => void): Promise<number> {
  const declared = Number(res.headers.get("content-length"));
  if (!res.headers.get("content-encoding") && declared > maxBytes) {
    await res.body?.cancel();
    throw new ControllerError("too_large", `${res.url}: ${declared} bytes, the cap is ${maxBytes}`, { status: res.status });
  }
  let size = 0;
  if (!res.body) return size;
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > maxBytes) throw new ControllerError("too_large", `${res.url}: more than ${maxBytes} bytes`, { status: res.status });
      take(value);
    }
  } catch (cause) {
    await reader.cancel().catch(() => undefined);
    if (cause instanceof BundleError || cause instanceof ControllerError) throw cause;
    throw new ControllerError("controller_unreachable", `${res.url}: ${(cause as Error).message}`, { status: res.status, cause });
  }
  return size;
}
