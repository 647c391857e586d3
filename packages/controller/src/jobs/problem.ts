import { AppError, errorTitles, problemTypeBase } from "@rlc/shared/errors";

/** What an internal failure stores in `job.error.detail`: the real message goes to the log only. */
export const INTERNAL_JOB_DETAIL = "the job failed on an internal error; the controller's log has the details";

/**
 * A job's error as a problem object. An AppError says what a user may read; anything else
 * (a database error with its SQL, a file path, a stack) is the caller's to log, and the job
 * keeps only a generic detail.
 */
export function problemOf(err: unknown): Record<string, unknown> {
  if (err instanceof AppError) {
    return { type: `${problemTypeBase}${err.code}`, title: errorTitles[err.code], status: err.status, detail: err.message, code: err.code, ...(err.extra ?? {}), ...(err.errors ? { errors: err.errors } : {}) };
  }
  return { type: `${problemTypeBase}internal`, title: errorTitles.internal, status: 500, detail: INTERNAL_JOB_DETAIL, code: "internal" };
}

/** The error of a job ended because its worker was lost (lease run out) on every attempt allowed. */
export const POISONED_PROBLEM: Record<string, unknown> = {
  ...problemOf(new AppError("internal", "the job's worker stopped (lease lost) on each of its attempts; it is not tried again")),
  reason: "poisoned",
};
