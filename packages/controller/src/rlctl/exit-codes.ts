import { ApiError } from "@rlc/client";

/** rlctl's exit codes; `rlctl --help` and docs/rlctl.md list them. */
export const ExitCode = {
  ok: 0,
  /** Anything else: a 5xx, an answer rlctl did not expect. */
  failed: 1,
  /** A misused command line, an unknown profile or output format. */
  usage: 2,
  /** No key, a key the controller refuses (401) or a role too low (403). */
  auth: 3,
  /** The module, job, revision, speaker or key named does not exist (404). */
  notFound: 4,
  /** The controller refused the request: invalid input, a conflict, a full queue (400, 409, 413, 422, 429). */
  refused: 5,
  /** A job rlctl followed ended failed or cancelled, or a speaker refused an apply. */
  jobFailed: 6,
  /** The controller could not be reached. */
  unreachable: 7,
  /** Interrupted (Ctrl-C) while following a job; the job keeps running. */
  interrupted: 130,
} as const;

export const exitCodeHelp = `Exit codes:
  0    done
  1    failed (a server error or an answer rlctl did not expect)
  2    misused: unknown command or option, bad argument, unknown profile
  3    no API key, a key the controller refuses (401), or a role too low (403)
  4    not found (404)
  5    refused by the controller: invalid input, conflict, full job queue (400/409/413/422/429)
  6    a followed job failed or was cancelled, or a speaker refused the apply
  7    the controller could not be reached
  130  interrupted (Ctrl-C); a followed job keeps running`;

/** An error rlctl reports as one line on stderr and exits with `code`. */
export class CliError extends Error {
  override name = "CliError";
  constructor(
    message: string,
    readonly code: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export function usageError(message: string): CliError {
  return new CliError(message, ExitCode.usage);
}

/** The exit code and the message for whatever a command threw. */
export function describeFailure(err: unknown): { code: number; message: string } {
  if (err instanceof CliError) return { code: err.code, message: err.message };
  if (err instanceof ApiError) {
    const fields = err.fieldErrors.length ? `\n  ${err.fieldErrors.join("\n  ")}` : "";
    const message = `${err.status} ${err.code}: ${err.detail}${fields}`;
    if (err.status === 401 || err.status === 403) return { code: ExitCode.auth, message };
    if (err.status === 404) return { code: ExitCode.notFound, message };
    if (err.status >= 400 && err.status < 500) return { code: ExitCode.refused, message };
    return { code: ExitCode.failed, message: err.requestId ? `${message} (request ${err.requestId})` : message };
  }
  const cause = (err as { cause?: { code?: string } } | null)?.cause;
  if (err instanceof TypeError && (err.message === "fetch failed" || cause?.code)) {
    return { code: ExitCode.unreachable, message: `cannot reach the controller: ${cause?.code ?? err.message}` };
  }
  return { code: ExitCode.failed, message: err instanceof Error ? err.message : String(err) };
}
