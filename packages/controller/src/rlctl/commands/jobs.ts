import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { fetchAll, listCommand, printOne, withContext } from "../command-kit.js";
import { type Ctx, resolveModule } from "../context.js";
import { coloured, followJob, progressBar } from "../follow-job.js";
import { type Column, print } from "../output.js";

type Job = Schema<"Job">;

function jobColumns(ctx: Ctx): Column<Job>[] {
  return [
    { header: "ID", value: (j) => j.job_id },
    { header: "TYPE", value: (j) => j.type },
    { header: "STATUS", value: (j) => coloured(ctx, j.status) },
    { header: "PROGRESS", value: (j) => (j.progress ? progressBar(j.progress.done, j.progress.total, 10) : null) },
    { header: "CREATED", value: (j) => j.created_at },
    { header: "ERROR", value: (j) => (j.error ? `${j.error.code}: ${j.error.detail}` : null) },
  ];
}

/** Follows a job to its end and prints it (exit 6 when it fails, 130 on Ctrl-C). */
export async function followAndPrint(ctx: Ctx, jobId: string): Promise<void> {
  printOne(ctx, await followJob(ctx, jobId), jobColumns(ctx));
}

type DryRun = Schema<"RpkiDryRun">;
type DryRunModule = DryRun["modules"][number] & { module: string };

/** `refresh --dry-run`: what RPKI validation of the current snapshots finds, a row per module, then the invalid prefixes. */
function printDryRun(ctx: Ctx, report: DryRun, names: Map<string, string>): void {
  const rows: DryRunModule[] = report.modules.map((m) => ({ ...m, module: names.get(m.module_id) ?? m.module_id }));
  print(ctx.output, report, rows, [
    { header: "MODULE", value: (m) => m.module },
    { header: "RPKI", value: (m) => m.rpki_policy },
    { header: "VALID", value: (m) => m.valid },
    { header: "INVALID", value: (m) => m.invalid },
    { header: "NOT FOUND", value: (m) => m.not_found },
    { header: "WOULD DROP", value: (m) => m.would_drop },
  ]);
  if (ctx.output.format !== "table") return;
  if (!report.rpki.available) ctx.output.err(`RPKI validation unavailable, nothing would be validated or dropped: ${report.rpki.reason}\n`);
  for (const m of rows)
    for (const p of m.invalid_prefixes) ctx.output.out(`invalid ${p.prefix} from AS${p.origin}${p.via ? ` via ${p.via}` : ""} (${m.module})\n`);
}

export function refreshCommand(program: Command): void {
  program
    .command("refresh [module]")
    .description("collect a module (by id or name) afresh, or every enabled one, and build a revision; shows the job's progress")
    .option("--force", "build a revision even when nothing changed")
    .option("--no-wait", "print the job and return at once")
    .option("--dry-run", "collect nothing, build nothing: what RPKI validation of the current snapshot finds and what drop_invalid would drop")
    .action(
      withContext(async (ctx, ref: string | undefined, opts: { force?: boolean; wait: boolean; dryRun?: boolean }) => {
        const body = opts.dryRun ? { dry_run: true } : { force: opts.force };
        const mod = ref ? await resolveModule(ctx, ref) : null;
        const answer = mod
          ? await unwrap(ctx.client.POST("/v1/modules/{module_id}/refresh", { params: { path: { module_id: mod.id } }, body }))
          : await unwrap(ctx.client.POST("/v1/modules/refresh", { body }));
        if ("dry_run" in answer) {
          const names = mod
            ? new Map([[mod.id, mod.name]])
            : new Map((await fetchAll(100_000, (query) => ctx.client.GET("/v1/modules", { params: { query } }))).map((m) => [m.id, m.name]));
          return printDryRun(ctx, answer, names);
        }
        if (opts.dryRun) throw new Error("the controller started a refresh instead of a dry run");
        const accepted = answer;
        if (!opts.wait) {
          printOne(ctx, accepted, [
            { header: "JOB", value: (j) => j.job_id },
            { header: "STATUS", value: (j) => j.status },
          ]);
          ctx.output.err(`follow it with: rlctl jobs watch ${accepted.job_id}\n`);
          return;
        }
        await followAndPrint(ctx, accepted.job_id);
      }),
    );
}

export function jobsCommand(program: Command): void {
  const jobs = program.command("jobs").alias("job").description("background jobs: ls, show, watch, cancel");

  listCommand(jobs, "ls", {
    description: "list jobs, newest first",
    filters: [
      ["--status <status>", "queued, running, awaiting, succeeded, failed or cancelled"],
      ["--type <type>", "module_ingest, apply, peer_reconcile, …"],
    ],
    limit: 50,
    page: (ctx, query, opts: { status?: Job["status"]; type?: Job["type"] }) =>
      ctx.client.GET("/v1/jobs", { params: { query: { ...query, status: opts.status, type: opts.type } } }),
    columns: jobColumns,
  });

  jobs
    .command("show <job>")
    .description("one job, with its result")
    .action(
      withContext(async (ctx, id: string) => {
        const job = await unwrap(ctx.client.GET("/v1/jobs/{job_id}", { params: { path: { job_id: id } } }));
        if (ctx.output.format !== "table") return print(ctx.output, job, [], []);
        printOne(ctx, job, jobColumns(ctx));
        if (job.result) ctx.output.out(`result: ${JSON.stringify(job.result, null, 2)}\n`);
      }),
    );

  jobs
    .command("watch <job>")
    .description("follow a job to its end with a progress bar (Ctrl-C stops following, not the job)")
    .action(withContext(followAndPrint));

  jobs
    .command("cancel <job>")
    .description("ask a job to stop")
    .action(
      withContext(async (ctx, id: string) => {
        printOne(ctx, await unwrap(ctx.client.POST("/v1/jobs/{job_id}/cancel", { params: { path: { job_id: id } } })), jobColumns(ctx));
      }),
    );
}
