import { AppError } from "@rlc/shared/errors";
import { problemBody } from "../../lib/problem.js";

/** What an internal failure stores in `job.error.detail`: the real message goes to the log only. */
export const INTERNAL_JOB_DETAIL = "the job failed on an internal error; the controller's log has the details";

/**
 * A job's error as a problem object. An AppError says what a user may read; anything else
 * (a database error with its SQL, a file path, a stack) is the caller's to log, and the job
 * keeps only a generic detail.
 */
export function problemOf(err: unknown): Record<string, unknown> {
  if (err instanceof AppError) {
    return problemBody(err.code, err.message, { errors: err.errors, extra: err.extra });
  }
  return problemBody("internal", INTERNAL_JOB_DETAIL);
}

/** The error of a job ended because its worker was lost (lease run out) on every attempt allowed. */
export const POISONED_PROBLEM: Record<string, unknown> = {
  ...problemOf(new AppError("internal", "the job's worker stopped (lease lost) on each of its attempts; it is not tried again")),
  reason: "poisoned",
};
