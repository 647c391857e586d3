/**
 * The closed set of error codes the API answers with, and the one code → status map.
 * `code` is a stable machine word; the problem `type` URI ends with it.
 */
export const errorStatus = {
  validation_failed: 400,
  invalid_cursor: 400,
  invalid_json: 400,
  unauthenticated: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  idempotency_in_flight: 409,
  payload_too_large: 413,
  file_too_large: 413,
  unsupported_media_type: 415,
  headers_too_large: 431,
  idempotency_key_reused: 422,
  revision_guard_tripped: 422,
  outbound_refused: 422,
  rate_limited: 429,
  too_many_jobs: 429,
  internal: 500,
  apply_failed: 502,
  runtime_logs_unavailable: 503,
  bird_unavailable: 503,
  nats_credentials_unavailable: 503,
  not_ready: 503,
  database_unavailable: 503,
} as const;

export type ErrorCode = keyof typeof errorStatus;

export const errorTitles: Record<ErrorCode, string> = {
  validation_failed: "Request validation failed",
  invalid_cursor: "Invalid cursor",
  invalid_json: "Malformed JSON body",
  unauthenticated: "Authentication required",
  forbidden: "Forbidden",
  not_found: "Not found",
  method_not_allowed: "Method not allowed",
  request_timeout: "Request timeout",
  conflict: "Conflict",
  idempotency_in_flight: "A request with this Idempotency-Key is in flight",
  payload_too_large: "Payload too large",
  file_too_large: "File too large",
  unsupported_media_type: "Unsupported media type",
  headers_too_large: "Request header fields too large",
  idempotency_key_reused: "Idempotency-Key reused with a different request",
  revision_guard_tripped: "Revision guard tripped",
  outbound_refused: "Outbound request refused",
  rate_limited: "Too many requests",
  too_many_jobs: "Too many jobs queued for this tenant",
  internal: "Internal server error",
  apply_failed: "Apply failed on one or more speakers",
  runtime_logs_unavailable: "Runtime logs unavailable",
  bird_unavailable: "BIRD unavailable",
  nats_credentials_unavailable: "NATS credentials unavailable",
  not_ready: "Not ready",
  database_unavailable: "Database unavailable",
};

export const problemTypeBase = "https://route-lists.dev/problems/";

export interface FieldError {
  path: string;
  message: string;
}

export interface AppErrorOptions {
  errors?: FieldError[];
  /** Extra members merged into the problem body (e.g. `job_id`, `modules`). */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
  cause?: unknown;
}

/** An error the API answers as problem+json with a stable code. Libraries throw these; only the transport maps them. */
export class AppError extends Error {
  override name = "AppError";
  readonly code: ErrorCode;
  readonly status: number;
  readonly errors: FieldError[] | undefined;
  readonly extra: Record<string, unknown> | undefined;
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, detail: string, options: AppErrorOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = errorStatus[code];
    this.errors = options.errors;
    this.extra = options.extra;
    this.headers = options.headers;
  }
}

export class NotFoundError extends AppError {
  override name = "NotFoundError";
  constructor(what: string, id?: string | number) {
    super("not_found", id === undefined ? `${what} not found` : `${what} ${id} not found`);
  }
}

export class ConflictError extends AppError {
  override name = "ConflictError";
  constructor(detail: string, extra?: Record<string, unknown>) {
    super("conflict", detail, extra ? { extra } : {});
  }
}

export class ValidationError extends AppError {
  override name = "ValidationError";
  constructor(detail: string, errors?: FieldError[], extra?: Record<string, unknown>) {
    super("validation_failed", detail, { errors: errors ?? [], ...(extra ? { extra } : {}) });
  }
}

export class ForbiddenError extends AppError {
  override name = "ForbiddenError";
  constructor(detail = "the key's role does not allow this operation") {
    super("forbidden", detail);
  }
}

export class UnauthenticatedError extends AppError {
  override name = "UnauthenticatedError";
  constructor(detail = "a valid Bearer API key is required") {
    super("unauthenticated", detail, { headers: { "www-authenticate": 'Bearer realm="route-lists"' } });
  }
}

export { CodedError } from "./coded-error.js";
