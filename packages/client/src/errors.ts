/** An RFC 9457 problem+json body as the controller writes it: `code` is stable, `type` ends with it. */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  instance?: string;
  request_id?: string;
  errors?: { path: string; message: string }[];
  [extra: string]: unknown;
}

/**
 * A call the controller answered with an error status. `code` is the problem's stable code
 * (`not_found`, `validation_failed`, …), or `http_<status>` when the body was not problem+json
 * (a proxy's HTML page, an empty 502).
 */
export class ApiError extends Error {
  override name = "ApiError";
  readonly status: number;
  readonly code: string;
  readonly detail: string;
  readonly requestId: string | undefined;
  /** The body as received: the problem, or its text when it was not JSON. */
  readonly problem: Problem | string | undefined;

  constructor(status: number, problem: Problem | string | undefined, options?: { cause?: unknown }) {
    const p = typeof problem === "object" && problem !== null ? problem : undefined;
    const detail = p?.detail ?? p?.title ?? (typeof problem === "string" && problem.trim() ? problem.trim().slice(0, 200) : `HTTP ${status}`);
    super(detail, options);
    this.status = p?.status ?? status;
    this.code = typeof p?.code === "string" ? p.code : `http_${status}`;
    this.detail = detail;
    this.requestId = p?.request_id;
    this.problem = problem;
  }

  /** Field errors of a 400 `validation_failed`, one line each (`path: message`). */
  get fieldErrors(): string[] {
    const p = typeof this.problem === "object" ? this.problem : undefined;
    return (p?.errors ?? []).map((e) => `${e.path}: ${e.message}`);
  }
}

/** What every openapi-fetch call resolves to. */
export interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/**
 * The answer's data, or an ApiError thrown from its problem+json body:
 * `const mod = await unwrap(client.GET("/v1/modules/{module_id}", { params }))`.
 */
export async function unwrap<T>(call: Promise<FetchResult<T>> | FetchResult<T>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw new ApiError(response.status, error as Problem | string | undefined);
  return data as T;
}
