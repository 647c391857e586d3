import { AppError, type AppErrorOptions } from "@rlc/shared/errors";

/**
 * Errors of the runtime-log file operations. They are AppErrors, so the problem+json handler
 * maps them (validation_failed → 400, not_found → 404, file_too_large → 413,
 * runtime_logs_unavailable → 503) with no help from the routes. Messages name the file only,
 * never the directory, so they are safe to return as `detail`; the underlying errno error
 * (with the full path) stays in `cause` for the log.
 */
export type RuntimeLogErrorCode = "validation_failed" | "not_found" | "file_too_large" | "runtime_logs_unavailable";

export class RuntimeLogError extends AppError {
  override name = "RuntimeLogError";
  declare readonly code: RuntimeLogErrorCode;

  constructor(code: RuntimeLogErrorCode, message: string, options?: AppErrorOptions) {
    super(code, message, options);
  }
}

/** A file name, mode or tail option outside what the API allows. */
export class InvalidLogRequestError extends RuntimeLogError {
  override name = "InvalidLogRequestError";
  /** The offending input: `filename`, `mode`, `lines`, `bytes`, `grep` or `threshold_bytes`. */
  readonly field: string;

  constructor(field: string, message: string) {
    super("validation_failed", message, { errors: [{ path: field, message }] });
    this.field = field;
  }
}

/**
 * The name does not denote a regular file in the directory. Symlinks, directories, FIFOs and
 * devices are reported like missing files: the listing does not show them either.
 */
export class LogFileNotFoundError extends RuntimeLogError {
  override name = "LogFileNotFoundError";

  constructor(filename: string, options?: ErrorOptions) {
    super("not_found", `runtime log file ${filename} not found`, { cause: options?.cause });
  }
}

/** Cleanup refused because the file is bigger than the limit (512 MiB). */
export class LogFileTooLargeError extends RuntimeLogError {
  override name = "LogFileTooLargeError";
  readonly size: number;
  readonly maxBytes: number;

  constructor(filename: string, size: number, maxBytes: number) {
    super("file_too_large", `runtime log file ${filename} has ${size} bytes, more than the ${maxBytes} bytes cleanup handles`, {
      extra: { size, max_bytes: maxBytes },
    });
    this.size = size;
    this.maxBytes = maxBytes;
  }
}

/** The configured directory cannot be read (missing, not a directory, no permission). */
export class LogDirUnavailableError extends RuntimeLogError {
  override name = "LogDirUnavailableError";

  constructor(options?: ErrorOptions) {
    super("runtime_logs_unavailable", "the runtime logs directory cannot be read", { cause: options?.cause });
  }
}
