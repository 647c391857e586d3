// The one outbound HTTP client of the controller: CDN feeds, DoH, the ASN source and the audit
// push all fetch through it, so the address policy, the limits and the redirect rules hold
// everywhere.
import { Agent } from "undici";
import { readBody } from "./outbound-body.js";
import { createCheckedConnector, type Resolver, systemResolver } from "./outbound-connect.js";
import {
  OutboundError,
  OutboundHttpError,
  OutboundNetworkError,
  OutboundRefusedError,
  OutboundTimeoutError,
  OutboundTooLargeError,
} from "./outbound-errors.js";
import { type Hop, type HopRequest, h2cHop, undiciHop } from "./outbound-hop.js";
import { type AddressPolicy, checkUrlForm, createAddressPolicy } from "./outbound-policy.js";

export type { ResolvedAddress, Resolver } from "./outbound-connect.js";
export * from "./outbound-errors.js";
export type { AddressPolicy, AddressRefusal } from "./outbound-policy.js";
export { checkUrlForm, createAddressPolicy } from "./outbound-policy.js";

export interface OutboundClientOptions {
  /** CIDRs reachable although the policy refuses them (`APP_OUTBOUND_ALLOW_CIDRS`, split). */
  allowCidrs?: readonly string[];
  /** Whole request, redirects and body included. Default 10 000. */
  timeoutMs?: number;
  /** Body cap, after decompression and on the wire. Default 32 MiB. */
  maxBytes?: number;
  /** Default 5. */
  maxRedirects?: number;
  userAgent?: string;
  /** Default: `dns.lookup` with `all: true`. */
  resolve?: Resolver;
  /** Extra CA certificates trusted for https. */
  ca?: string | Buffer | Array<string | Buffer>;
}

export interface OutboundRequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  timeoutMs?: number;
  maxBytes?: number;
  /** Skip the address policy for the URL's own origin (operator-configured audit portal). Limits still apply. */
  trusted?: boolean;
  /** HTTP/2: prior knowledge (h2c) for http:, ALPN for https:. */
  http2?: boolean;
  /** Cancels the request (a cancelled job); the signal's reason is thrown. */
  signal?: AbortSignal;
}

export interface OutboundResponse {
  status: number;
  /** Lower-case names. */
  headers: Record<string, string>;
  /** Decompressed. */
  body: Buffer;
  /** Final URL, after redirects. */
  url: string;
  /** Bytes of the final body as received, before decompression. */
  fetchedBytes: number;
  durationMs: number;
}

export interface OutboundClient {
  /** Resolves with a 2xx response; throws an OutboundError otherwise. */
  request(url: string | URL, options?: OutboundRequestOptions): Promise<OutboundResponse>;
  /** Save-time check (scheme, credentials, literal address); throws OutboundRefusedError. */
  checkUrlForm(url: string | URL): URL;
  close(): Promise<void>;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
// Dropped when a redirect leaves the origin, as browsers and undici's redirect handler do.
const ORIGIN_BOUND_HEADERS = ["authorization", "cookie", "proxy-authorization"];
const BODY_HEADERS = ["content-type", "content-length", "content-encoding"];
const SNIPPET_BYTES = 1024;
const OPEN_POLICY: AddressPolicy = { refusal: () => null };

export function createOutboundClient(options: OutboundClientOptions = {}): OutboundClient {
  const policy = createAddressPolicy(options.allowCidrs ?? []);
  const defaults = {
    timeoutMs: options.timeoutMs ?? 10_000,
    maxBytes: options.maxBytes ?? 32 * 1024 * 1024,
    maxRedirects: options.maxRedirects ?? 5,
    userAgent: options.userAgent ?? "route-list-controller",
  };
  const resolve = options.resolve ?? systemResolver;

  // One agent per (policy, HTTP/2) pair: the check lives in the agent's connector, and pooled
  // connections are keyed by origin only. The whole-request signal replaces undici's timers.
  const transport = (trusted: boolean, allowH2: boolean) => {
    const connect = createCheckedConnector({
      policy: trusted ? null : policy,
      resolve,
      resolveTimeoutMs: defaults.timeoutMs,
      ca: options.ca,
      allowH2,
    });
    return { connect, agent: new Agent({ connect, allowH2, headersTimeout: 0, bodyTimeout: 0 }) };
  };
  const transports = [transport(false, false), transport(false, true), transport(true, false), transport(true, true)];

  const hop = (req: HopRequest, trusted: boolean, http2: boolean): Promise<Hop> => {
    const { connect, agent } = transports[(trusted ? 2 : 0) + (http2 ? 1 : 0)]!;
    // undici's allowH2 negotiates HTTP/2 through TLS ALPN only; cleartext needs prior knowledge.
    if (http2 && req.url.protocol === "http:") return h2cHop(connect, req);
    return undiciHop(agent, req);
  };

  const formPolicy = (url: URL, first: URL, trusted: boolean): AddressPolicy => (trusted && url.origin === first.origin ? OPEN_POLICY : policy);

  async function request(input: string | URL, init: OutboundRequestOptions = {}): Promise<OutboundResponse> {
    const started = performance.now();
    const timeoutMs = init.timeoutMs ?? defaults.timeoutMs;
    const maxBytes = init.maxBytes ?? defaults.maxBytes;
    const trusted = init.trusted === true;
    const first = checkUrlForm(input, trusted ? OPEN_POLICY : policy);

    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(new OutboundTimeoutError(timeoutMs)), timeoutMs);
    const signal = init.signal ? AbortSignal.any([timer.signal, init.signal]) : timer.signal;

    const headers: Record<string, string> = { "user-agent": defaults.userAgent, "accept-encoding": "gzip, deflate" };
    for (const [name, value] of Object.entries(init.headers ?? {})) headers[name.toLowerCase()] = value;
    let req: HopRequest = {
      url: first,
      method: (init.method ?? "GET").toUpperCase(),
      headers,
      body: init.body === undefined ? undefined : Buffer.from(init.body),
      signal,
    };
    try {
      for (let redirects = 0; ; redirects++) {
        const res = await hop(req, trusted && req.url.origin === first.origin, init.http2 === true);
        const location = res.headers.location;
        if (!REDIRECTS.has(res.status) || location === undefined) {
          const done = await finish(res, req.url, maxBytes, signal);
          return { ...done, durationMs: Math.round(performance.now() - started) };
        }
        res.release();
        if (redirects >= defaults.maxRedirects) {
          throw new OutboundRefusedError("too_many_redirects", `more than ${defaults.maxRedirects} redirects`);
        }
        let next: URL;
        try {
          next = new URL(location, req.url);
        } catch {
          throw new OutboundNetworkError(`redirect to an invalid Location: ${location.slice(0, 200)}`);
        }
        req = redirectRequest(req, res.status, checkUrlForm(next, formPolicy(next, first, trusted)));
      }
    } catch (err) {
      throw outboundErrorOf(err, { timer: timer.signal, caller: init.signal, url: req.url, timeoutMs });
    } finally {
      clearTimeout(timeout);
    }
  }

  return {
    request,
    checkUrlForm: (url) => checkUrlForm(url, policy),
    close: async () => {
      await Promise.all(transports.map(({ agent }) => agent.close()));
    },
  };
}

/** RFC 9110 15.4: 303, and 301/302 after a POST, become a GET without a body. */
function redirectRequest(req: HopRequest, status: number, next: URL): HopRequest {
  const toGet = status === 303 ? req.method !== "HEAD" : (status === 301 || status === 302) && req.method === "POST";
  const headers = { ...req.headers };
  if (toGet) for (const name of BODY_HEADERS) delete headers[name];
  if (next.origin !== req.url.origin) for (const name of ORIGIN_BOUND_HEADERS) delete headers[name];
  return { url: next, method: toGet ? "GET" : req.method, headers, body: toGet ? undefined : req.body, signal: req.signal };
}

async function finish(res: Hop, url: URL, maxBytes: number, signal: AbortSignal): Promise<Omit<OutboundResponse, "durationMs">> {
  const encoding = res.headers["content-encoding"];
  try {
    if (res.status < 200 || res.status > 299) {
      let snippet = "";
      try {
        const read = await readBody(res.body, encoding, Math.min(maxBytes, 64 * 1024), signal);
        snippet = read.body.subarray(0, SNIPPET_BYTES).toString("utf8");
      } catch (err) {
        if (signal.aborted) throw err;
      }
      throw new OutboundHttpError(res.status, snippet);
    }
    // Refuse early what announces itself as too large; the count below still guards the rest.
    if (encoding === undefined && Number(res.headers["content-length"]) > maxBytes) {
      throw new OutboundTooLargeError(maxBytes);
    }
    const read = await readBody(res.body, encoding, maxBytes, signal);
    return { status: res.status, headers: res.headers, body: read.body, url: url.href, fetchedBytes: read.wireBytes };
  } finally {
    res.release();
  }
}

function outboundErrorOf(err: unknown, context: { timer: AbortSignal; caller: AbortSignal | undefined; url: URL; timeoutMs: number }): unknown {
  if (context.timer.aborted) return new OutboundTimeoutError(context.timeoutMs, context.url.href);
  if (context.caller?.aborted) return context.caller.reason;
  // undici may wrap what the connector threw; look down the cause chain.
  let found: unknown = err;
  for (let depth = 0; depth < 5 && found instanceof Error && !(found instanceof OutboundError); depth++) {
    found = found.cause;
  }
  const outbound = found instanceof OutboundError ? found : new OutboundNetworkError(err instanceof Error ? err.message : String(err), { cause: err });
  outbound.url ??= context.url.href;
  return outbound;
}
