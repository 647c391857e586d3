import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { type Ctx, contextOf, listAll, positiveInt, resolveSpeaker } from "../context.js";
import { CliError, ExitCode } from "../exit-codes.js";
import { coloured, followJob, jobOfFailure } from "../follow-job.js";
import { print } from "../output.js";

type Job = Schema<"Job">;
type Speaker = Schema<"Speaker">;
interface Outcome {
  speaker_id: string;
  status: string;
  error: { code?: string; message?: string } | null;
}

/** Where a speaker stands with the revision being applied, from its row. */
function stateOf(s: Speaker, revisionId: number): string {
  if (s.applied_revision_id === revisionId && s.sync_status === "in_sync") return "applied";
  if (s.dispatch_status === "failed") return "failed";
  return s.dispatch_status === "idle" ? "pending" : s.dispatch_status;
}

/** A line per speaker whenever its state changes: `r1  pending → dispatched → applied`. */
function speakerProgress(ctx: Ctx, names: Map<string, string>) {
  const last = new Map<string, string>();
  return async (job: Job) => {
    const params = job.params as { revision_id?: number; speaker_ids?: string[] };
    if (params.revision_id === undefined || !params.speaker_ids) return;
    const ids = new Set(params.speaker_ids);
    const rows = await listAll(5000, (cursor, limit) => unwrap(ctx.client.GET("/v1/speakers", { params: { query: { cursor, limit } } })));
    const outcomes = new Map(((job.result as { speakers?: Outcome[] } | null)?.speakers ?? []).map((o) => [o.speaker_id, o.status]));
    for (const s of rows) {
      if (!ids.has(s.id)) continue;
      names.set(s.id, s.name);
      const state = outcomes.get(s.id) ?? stateOf(s, params.revision_id);
      if (last.get(s.id) === state) continue;
      last.set(s.id, state);
      ctx.output.err(`${s.name}  ${coloured(ctx, state)}${state === "failed" && s.last_error ? `  ${JSON.stringify(s.last_error)}` : ""}\n`);
    }
  };
}

function printOutcomes(ctx: Ctx, job: Job, names: Map<string, string>): Outcome[] {
  const outcomes = (job.result as { speakers?: Outcome[] } | null)?.speakers ?? [];
  print(ctx.output, job, outcomes, [
    { header: "SPEAKER", value: (o) => names.get(o.speaker_id) ?? o.speaker_id },
    { header: "STATUS", value: (o) => coloured(ctx, o.status) },
    { header: "ERROR", value: (o) => (o.error ? `${o.error.code ?? ""} ${o.error.message ?? ""}`.trim() : null) },
  ]);
  return outcomes;
}

export function applyCommand(program: Command): void {
  program
    .command("apply")
    .description("apply a revision (default: the current one) to speakers (default: all) and follow each speaker until it reports")
    .option("--revision <n>", "the revision to apply", positiveInt("--revision"))
    .option("-s, --speaker <speaker...>", "only these speakers (id or name)")
    .option("--timeout <seconds>", "how long to wait for the agents' reports", positiveInt("--timeout"))
    .option("--force-confirm", "skip the agents' session and route checks (a change meant to take a session down)")
    .option("--no-wait", "print the job and return at once")
    .action(async (opts: { revision?: number; speaker?: string[]; timeout?: number; forceConfirm?: boolean; wait: boolean }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const speakers = opts.speaker ? await Promise.all(opts.speaker.map((s) => resolveSpeaker(ctx, s))) : undefined;
      const names = new Map((speakers ?? []).map((s) => [s.id, s.name]));
      const body = { revision_id: opts.revision, speaker_ids: speakers?.map((s) => s.id), timeout_seconds: opts.timeout, force_confirm: opts.forceConfirm };
      const accepted = await unwrap(ctx.client.POST("/v1/apply", { body }));
      ctx.output.err(`apply job ${accepted.job_id}\n`);
      if (!opts.wait) {
        print(ctx.output, accepted, [accepted], [{ header: "JOB", value: (j) => j.job_id }]);
        return;
      }
      let job: Job;
      try {
        job = await followJob(ctx, accepted.job_id, { quiet: true, intervalMs: 400, onUpdate: speakerProgress(ctx, names) });
      } catch (err) {
        const failed = jobOfFailure(err);
        if (!failed) throw err;
        const outcomes = printOutcomes(ctx, failed, names);
        const refused = outcomes.filter((o) => o.status !== "applied");
        throw new CliError(
          refused.length
            ? `${refused.length} speaker(s) did not apply revision ${(failed.params as { revision_id?: number }).revision_id}`
            : (err as Error).message,
          ExitCode.jobFailed,
        );
      }
      printOutcomes(ctx, job, names);
    });
}
