// One request/response exchange, without redirects: over undici (HTTP/1.1, and HTTP/2 when TLS
// ALPN offers it) or over node:http2 for cleartext HTTP/2 with prior knowledge (h2c), which
// the DoH test server (unbound, `http-notls-downstream`) requires.
import { connect as connectH2, type IncomingHttpHeaders } from "node:http2";
import type { Readable } from "node:stream";
import type { buildConnector, Dispatcher } from "undici";
import { connectChecked } from "./outbound-connect.js";
import { OutboundNetworkError } from "./outbound-errors.js";

export interface HopRequest {
  url: URL;
  method: string;
  /** Lower-case names. */
  headers: Record<string, string>;
  body: Buffer | undefined;
  signal: AbortSignal;
}

export interface Hop {
  status: number;
  /** Lower-case names; repeated fields joined with ", ". */
  headers: Record<string, string>;
  body: Readable;
  /** Frees the connection (or the HTTP/2 session) once the body is read or abandoned. */
  release(): void;
}

export function flattenHeaders(headers: Record<string, string | string[] | number | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    flat[name.toLowerCase()] = Array.isArray(value) ? value.join(", ") : String(value);
  }
  return flat;
}

export async function undiciHop(dispatcher: Dispatcher, req: HopRequest): Promise<Hop> {
  const pending = dispatcher.request({
    origin: req.url.origin,
    path: req.url.pathname + req.url.search,
    method: req.method as Dispatcher.HttpMethod,
    headers: req.headers,
    body: req.body ?? null,
    signal: req.signal,
  });
  // undici applies an abort only once the request holds a connection; one still connecting
  // (a slow resolver, a blackholed address) would outlive the timeout without this race.
  const res = await untilAborted(pending, req.signal, (late) => destroyQuietly(late.body));
  return {
    status: res.statusCode,
    headers: flattenHeaders(res.headers),
    body: res.body,
    release: () => destroyQuietly(res.body),
  };
}

/** An unread body (a redirect's, an error's) errors with "aborted" when destroyed; expected here. */
function destroyQuietly(body: Readable): void {
  body.on("error", () => {});
  body.destroy();
}

// RFC 9113 8.2.2: connection-specific fields are malformed in HTTP/2.
const H2_FORBIDDEN = new Set(["connection", "host", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"]);

/** h2c prior knowledge over a socket opened by the checked connector: one session per request. */
export async function h2cHop(connector: buildConnector.connector, req: HopRequest): Promise<Hop> {
  const socket = await untilAborted(connectChecked(connector, req.url), req.signal, (late) => late.destroy());
  const session = connectH2(req.url.origin, { createConnection: () => socket });
  const release = () => session.destroy();
  const headers: Record<string, string> = { ":method": req.method, ":path": req.url.pathname + req.url.search };
  for (const [name, value] of Object.entries(req.headers)) if (!H2_FORBIDDEN.has(name)) headers[name] = value;
  const stream = session.request(headers, { endStream: req.body === undefined });
  // Session errors (GOAWAY, socket reset) surface on the stream being read.
  session.on("error", (err) => stream.destroy(err));
  if (req.body !== undefined) stream.end(req.body);
  try {
    const responseHeaders = await new Promise<IncomingHttpHeaders>((resolve, reject) => {
      const onAbort = () => reject(req.signal.reason);
      req.signal.addEventListener("abort", onAbort, { once: true });
      stream.once("response", (h) => {
        req.signal.removeEventListener("abort", onAbort);
        resolve(h);
      });
      stream.once("error", reject);
      stream.once("close", () => reject(new OutboundNetworkError("HTTP/2 stream closed before a response")));
    });
    return {
      status: Number(responseHeaders[":status"]),
      headers: flattenHeaders(responseHeaders),
      body: stream,
      release,
    };
  } catch (err) {
    release();
    throw err;
  }
}

/** Settles with `promise`, or rejects as soon as `signal` aborts; a late value goes to `discard`. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal, discard: (value: T) => void): Promise<T> {
  if (signal.aborted) {
    promise.then(discard, () => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        if (signal.aborted) discard(value);
        else resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
