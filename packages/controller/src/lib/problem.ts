import { type ErrorCode, errorStatus, errorTitles, type FieldError, problemTypeBase } from "@rlc/shared/errors";

export interface ProblemExtras {
  /** The request path (HTTP answers only). */
  instance?: string | undefined;
  /** The request id (HTTP answers only). */
  requestId?: string | undefined;
  errors?: FieldError[] | undefined;
  /** Members of the code's own (`retry_after`, `job_id`, `checks`…). */
  extra?: Record<string, unknown> | undefined;
}

/**
 * The one problem+json body builder: the HTTP error handler, the HTTP parser's refusals and a
 * failed job's `error` all answer with it, so a code means the same type, title and status
 * wherever a client reads it.
 */
export function problemBody(code: ErrorCode, detail: string, more: ProblemExtras = {}): Record<string, unknown> {
  return {
    type: `${problemTypeBase}${code}`,
    title: errorTitles[code],
    status: errorStatus[code],
    detail,
    code,
    ...(more.instance === undefined ? {} : { instance: more.instance }),
    ...(more.requestId === undefined ? {} : { request_id: more.requestId }),
    ...(more.errors ? { errors: more.errors } : {}),
    ...(more.extra ?? {}),
  };
}
