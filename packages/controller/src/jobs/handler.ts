import type { JobType } from "@rlc/shared/schemas";
import type { Db } from "../db/connect.js";
import type { JobRow } from "../db/jobs.js";

/** Thrown at a checkpoint once a cancel was asked: the job ends `cancelled`, changing nothing. */
export class JobCancelledError extends Error {
  override name = "JobCancelledError";
  constructor() {
    super("the job was cancelled");
  }
}

/** Thrown when the worker lost the job (its lease ran out and another worker took it). */
export class JobLostError extends Error {
  override name = "JobLostError";
  constructor() {
    super("the job's lease was lost");
  }
}

/** What a handler sees of the job it runs. */
export interface JobContext {
  job: JobRow;
  /** Aborted when a cancel is asked or the lease is lost; pass it to fetches. */
  signal: AbortSignal;
  now(): Date;
  /** Records progress (shown in GET /v1/jobs/{id}). */
  progress(done: number, total: number | null): Promise<void>;
  /** Throws JobCancelledError when a cancel was asked; call it between steps. */
  checkpoint(): Promise<void>;
  /**
   * Runs the job's final writes in one transaction that also checks the job is still ours and
   * not cancelled, and marks it succeeded with `result`: the effect and the job's end commit
   * together, so a worker killed before this point leaves nothing, and after it, everything.
   */
  complete<R extends Record<string, unknown>>(fn: (tx: Db) => Promise<R>): Promise<R>;
  /**
   * Parks the job as `awaiting` (the worker slot is freed once `run` returns): something outside
   * (agents' reports, the deadline sweep) ends it later. Throws when a cancel was asked or the
   * job was lost meanwhile.
   */
  park(p: { awaiting: unknown; deadline: Date; done: number; total: number }): Promise<void>;
}

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
