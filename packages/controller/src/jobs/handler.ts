import type { JobType } from "@rlc/shared/schemas";
import type { JobContext } from "../services/operations/job-context.js";

export { JobCancelledError, type JobContext, JobLostError } from "../services/operations/job-context.js";

/** One handler per job type, one file per handler (src/jobs/*-job.ts). */
export interface JobHandler {
  type: JobType;
  /**
   * `long` for work that may take minutes (collecting sources); `quick` (the default) for the
   * rest. Quick jobs also have slots of their own, so they never wait behind long ones.
   */
  lane?: "quick" | "long";
  /** Order among a tenant's due jobs: lower first (default 10). */
  priority?: number;
  /** Attempts before the job fails for good (errors that are not AppErrors are retried). */
  maxAttempts?: number;
  /** Returns the job's result, unless it called `ctx.complete`. */
  run(ctx: JobContext): Promise<Record<string, unknown> | undefined>;
}
