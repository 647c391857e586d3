import { type Schema, unwrap } from "@rlc/client";
import type { Ctx } from "./context.js";
import { CliError, ExitCode } from "./exit-codes.js";
import { paint } from "./output.js";

type Job = Schema<"Job">;

const finished = new Set(["succeeded", "failed", "cancelled"]);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `[#########-----------]  9/20  45%`, or a spinner-less count when the total is unknown. */
export function progressBar(done: number, total: number | null, width = 24): string {
  if (!total) return `${done} done`;
  const share = Math.min(1, done / total);
  const filled = Math.round(share * width);
  return `[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total} ${Math.round(share * 100)}%`;
}

export interface FollowOptions {
  intervalMs?: number;
  /** Called with each new state of the job (apply's per-speaker lines hang on it). */
  onUpdate?: (job: Job) => Promise<void> | void;
  /** Draw no bar (apply prints its own lines). */
  quiet?: boolean;
}

/**
 * Polls the job until it ends, drawing its progress on stderr: one bar redrawn in place on a
 * terminal, a line per change elsewhere. Ctrl-C stops following and leaves the job running
 * (exit 130, with the command that follows it again). A job that ends failed or cancelled is
 * a CliError with exit 6 carrying the job.
 */
export async function followJob(ctx: Ctx, jobId: string, opts: FollowOptions = {}): Promise<Job> {
  const o = ctx.output;
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
  };
  process.once("SIGINT", onSigint);
  let last = "";
  try {
    for (;;) {
      const job = await unwrap(ctx.client.GET("/v1/jobs/{job_id}", { params: { path: { job_id: jobId } } }));
      await opts.onUpdate?.(job);
      const line = `${job.type} ${job.job_id.slice(0, 8)} ${job.status.padEnd(9)} ${progressBar(job.progress?.done ?? 0, job.progress?.total ?? null)}`;
      if (!opts.quiet && line !== last) {
        o.err(o.interactive ? `\r\x1b[2K${line}` : `${line}\n`);
        last = line;
      }
      if (finished.has(job.status)) {
        if (!opts.quiet && o.interactive) o.err("\n");
        if (job.status !== "succeeded") {
          const why = job.error ? `${job.error.code}: ${job.error.detail}` : job.status;
          throw new CliError(`job ${job.job_id} ${job.status}: ${why}`, ExitCode.jobFailed, { cause: job });
        }
        return job;
      }
      const until = Date.now() + (opts.intervalMs ?? 500);
      while (!interrupted && Date.now() < until) await sleep(50);
      if (interrupted) {
        if (o.interactive && !opts.quiet) o.err("\n");
        throw new CliError(
          `stopped following; job ${jobId} keeps running. Follow it with: rlctl jobs watch ${jobId} (cancel: rlctl jobs cancel ${jobId})`,
          ExitCode.interrupted,
        );
      }
    }
  } finally {
    process.off("SIGINT", onSigint);
  }
}

/** The job of a failure thrown by followJob, when there is one. */
export function jobOfFailure(err: unknown): Job | null {
  return err instanceof CliError && err.code === ExitCode.jobFailed ? ((err.cause as Job | undefined) ?? null) : null;
}

export function statusColour(status: string): "green" | "red" | "yellow" | "dim" {
  if (status === "succeeded" || status === "applied" || status === "in_sync" || status === "up" || status === "Established") return "green";
  if (status === "failed" || status === "timeout" || status === "error" || status === "out_of_sync" || status === "cancelled" || status === "down")
    return "red";
  if (status === "unknown" || status === "-") return "dim";
  return "yellow";
}

export const coloured = (ctx: Ctx, status: string) => paint(ctx.output, statusColour(status), status);
