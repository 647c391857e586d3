// Errors of the outbound client. Each carries a stable `code` so callers (routes, refresh jobs)
// can map it without matching messages: `outbound_refused` becomes a 422 on preview and a
// `last_error` on refresh.

export type OutboundErrorCode = "outbound_refused" | "outbound_timeout" | "outbound_too_large" | "outbound_http_status" | "outbound_network";

export abstract class OutboundError extends Error {
  abstract readonly code: OutboundErrorCode;
  /** The URL being fetched when the error happened (after redirects); filled in by the client. */
  url: string | undefined;

  constructor(message: string, options: { url?: string | undefined; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.url = options.url;
  }
}

export type RefusalReason =
  | "invalid_url"
  | "scheme"
  | "credentials"
  | "too_many_redirects"
  | "invalid_address"
  | "unspecified"
  | "loopback"
  | "private"
  | "link_local"
  | "metadata"
  | "cgnat"
  | "multicast"
  | "broadcast"
  | "reserved"
  | "documentation"
  | "benchmarking"
  | "unique_local";

/** The policy refused the URL: by its form, its literal address, a resolved address or a redirect. */
export class OutboundRefusedError extends OutboundError {
  override readonly name = "OutboundRefusedError";
  override readonly code = "outbound_refused" as const;
  readonly reason: RefusalReason;
  /** The refused address, as connected to or written in the URL. */
  readonly address: string | undefined;
  /** For an IPv6 form that embeds an IPv4 address (mapped, compatible, NAT64, 6to4): that IPv4. */
  readonly via: string | undefined;

  constructor(reason: RefusalReason, message: string, details: { address?: string | undefined; via?: string | undefined; url?: string | undefined } = {}) {
    super(message, { url: details.url });
    this.reason = reason;
    this.address = details.address;
    this.via = details.via;
  }
}

export class OutboundTimeoutError extends OutboundError {
  override readonly name = "OutboundTimeoutError";
  override readonly code = "outbound_timeout" as const;
  readonly timeoutMs: number;

  constructor(timeoutMs: number, url?: string) {
    super(`request did not complete within ${timeoutMs} ms`, { url });
    this.timeoutMs = timeoutMs;
  }
}

export class OutboundTooLargeError extends OutboundError {
  override readonly name = "OutboundTooLargeError";
  override readonly code = "outbound_too_large" as const;
  readonly maxBytes: number;

  constructor(maxBytes: number, url?: string) {
    super(`response body is larger than ${maxBytes} bytes`, { url });
    this.maxBytes = maxBytes;
  }
}

/** The final response (after redirects) was not 2xx. */
export class OutboundHttpError extends OutboundError {
  override readonly name = "OutboundHttpError";
  override readonly code = "outbound_http_status" as const;
  readonly status: number;
  /** Up to 1 KiB of the body, as text, for the operator's eyes. */
  readonly bodySnippet: string;

  constructor(status: number, bodySnippet: string, url?: string) {
    super(`server answered HTTP ${status}`, { url });
    this.status = status;
    this.bodySnippet = bodySnippet;
  }
}

/** DNS failure, connection refused or reset, TLS failure, malformed response. */
export class OutboundNetworkError extends OutboundError {
  override readonly name = "OutboundNetworkError";
  override readonly code = "outbound_network" as const;

  constructor(message: string, options: { url?: string | undefined; cause?: unknown } = {}) {
    super(message, options);
  }
}
