import type { Tx } from "../../db/connect.js";
import type { JobRow } from "../../db/jobs.js";

/**
 * What a job handler sees of the job it runs; services that do a job's work (an ingest, a
 * maintenance run) take the part of it they need.
 */
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
  complete<R extends Record<string, unknown>>(fn: (tx: Tx) => Promise<R>): Promise<R>;
  /**
   * Parks the job as `awaiting` (the worker slot is freed once `run` returns): something outside
   * (agents' reports, the deadline sweep) ends it later. Throws when a cancel was asked or the
   * job was lost meanwhile.
   */
  park(p: { awaiting: unknown; deadline: Date; done: number; total: number }): Promise<void>;
}

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
