import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { limitOption, listCommand, printRows, withContext } from "../command-kit.js";
import type { Ctx } from "../context.js";
import { CliError, ExitCode, usageError } from "../exit-codes.js";
import { type Column, fieldColumns, paint, print, printObject } from "../output.js";

type Revision = Schema<"Revision">;
type Diff = Schema<"RevisionDiff">;

const columns: Column<Revision>[] = [
  { header: "REVISION", value: (r) => (r.is_current ? `${r.revision_id}*` : r.revision_id) },
  { header: "CREATED", value: (r) => r.created_at },
  { header: "REASON", value: (r) => (r.rolled_back_from ? `rollback of ${r.rolled_back_from}` : r.reason) },
  { header: "V4", value: (r) => r.prefix_count_v4 },
  { header: "V6", value: (r) => r.prefix_count_v6 },
  { header: "DROPPED", value: (r) => r.dropped_prefix_count },
  { header: "APPLIED TO", value: (r) => r.applied_to.length },
];

/** A revision number, or `current` (the newest current one) and `previous` (the one before it). */
async function revisionNumber(ctx: Ctx, ref: string): Promise<number> {
  if (/^\d+$/.test(ref)) return Number(ref);
  if (ref !== "current" && ref !== "previous") throw usageError(`revision ${ref}: give a number, current or previous`);
  const recent = await unwrap(ctx.client.GET("/v1/revisions", { params: { query: { limit: 500 } } }));
  const at = recent.items.findIndex((r) => r.is_current);
  const found = ref === "current" ? recent.items[at] : at >= 0 ? recent.items[at + 1] : undefined;
  if (!found) throw new CliError(`there is no ${ref} revision`, ExitCode.notFound);
  return found.revision_id;
}

/** `+ prefix  communities` in green, `- …` in red, `~ prefix  -old +new` in yellow. */
export function renderDiff(ctx: Ctx, diff: Diff): string {
  const lines = [paint(ctx.output, "bold", `revision ${diff.from} → ${diff.to}`)];
  const width = Math.max(18, ...[...diff.added, ...diff.removed, ...diff.changed].map((e) => e.prefix.length));
  const pad = (p: string) => p.padEnd(width);
  for (const a of diff.added) lines.push(paint(ctx.output, "green", `+ ${pad(a.prefix)}  ${a.communities.join(" ") || "-"}`));
  for (const r of diff.removed) lines.push(paint(ctx.output, "red", `- ${pad(r.prefix)}  ${r.communities.join(" ") || "-"}`));
  for (const c of diff.changed) {
    const gone = c.from_communities.filter((x) => !c.to_communities.includes(x)).map((x) => paint(ctx.output, "red", `-${x}`));
    const come = c.to_communities.filter((x) => !c.from_communities.includes(x)).map((x) => paint(ctx.output, "green", `+${x}`));
    lines.push(`${paint(ctx.output, "yellow", `~ ${pad(c.prefix)}`)}  ${[...gone, ...come].join(" ")}`);
  }
  lines.push(`${diff.added_count} added, ${diff.removed_count} removed, ${diff.changed_count} changed${diff.truncated ? " (lists truncated: --limit)" : ""}`);
  return `${lines.join("\n")}\n`;
}

export function revisionsCommand(program: Command): void {
  const revisions = program.command("revisions").alias("revision").description("built revisions of the route lists: ls, show, diff");

  listCommand(revisions, "ls", {
    description: "list revisions, newest first (* marks the current one)",
    limit: 20,
    page: (ctx, query) => ctx.client.GET("/v1/revisions", { params: { query } }),
    columns,
  });

  revisions
    .command("show <revision>")
    .description("one revision (a number, current or previous) and its modules")
    .action(
      withContext(async (ctx, ref: string) => {
        const rev = await unwrap(ctx.client.GET("/v1/revisions/{revision_id}", { params: { path: { revision_id: await revisionNumber(ctx, ref) } } }));
        if (ctx.output.format !== "table") return print(ctx.output, rev, [], []);
        const { modules, applied_to, ...rest } = rev;
        printObject(ctx.output, { ...rest, applied_to: applied_to.map((a) => a.speaker_id) });
        ctx.output.out("\n");
        printRows(ctx, modules, fieldColumns({ MODULE: "name", COMMUNITY: "community", PREFIXES: "prefix_count" }));
      }),
    );

  revisions
    .command("diff <a> <b>")
    .description("what changes from revision a to b: + added, - removed, ~ communities changed, per prefix")
    .addOption(limitOption(undefined, "at most this many prefixes per list"))
    .action(
      withContext(async (ctx, a: string, b: string, opts: { limit?: number }) => {
        const path = { revision_a: await revisionNumber(ctx, a), revision_b: await revisionNumber(ctx, b) };
        const diff = await unwrap(ctx.client.GET("/v1/revisions/{revision_a}/diff/{revision_b}", { params: { path, query: { limit: opts.limit } } }));
        if (ctx.output.format !== "table") print(ctx.output, diff, [], []);
        else ctx.output.out(renderDiff(ctx, diff));
      }),
    );
}

export function lookupCommand(program: Command): void {
  program
    .command("lookup <query>")
    .description("is an IP address announced, and why? Which module, entry and community")
    .action(
      withContext(async (ctx, q: string) => {
        const result = await unwrap(ctx.client.GET("/v1/lookup", { params: { query: { q } } }));
        if (ctx.output.format !== "table") return print(ctx.output, result, [], []);
        const head = result.matched ? paint(ctx.output, "green", "matched") : paint(ctx.output, "dim", "not in the lists");
        ctx.output.out(`${result.normalized} (${result.kind}): ${head}\n`);
        ctx.output.out(`${result.answer}\n`);
        if (result.revision) ctx.output.out(`revision ${result.revision.revision_id}: ${result.revision.prefix} ${result.revision.communities.join(" ")}\n`);
        if (result.matches.length) {
          ctx.output.out("\n");
          print(ctx.output, result.matches, result.matches, [
            { header: "MODULE", value: (m) => m.module_name },
            { header: "TYPE", value: (m) => m.module_type },
            { header: "LAYER", value: (m) => m.layer },
            { header: "MATCH", value: (m) => ("value" in m ? m.value : (m.prefix ?? m.origin)) },
            { header: "COMMUNITY", value: (m) => m.community },
            // A collected match's source of record: the ASN (and the AS-SET it came through), its RPKI state.
            { header: "ORIGIN", value: (m) => (m.layer === "snapshot" ? `${m.origin}${m.via ? ` via ${m.via}` : ""}` : null) },
            { header: "RPKI", value: (m) => (m.layer === "snapshot" ? (m.rpki ?? null) : null) },
          ]);
        }
      }),
    );
}
