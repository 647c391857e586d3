import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { contextOf, isUuid, listAll, resolveModule } from "../context.js";
import { parseCsv, readInput, toCsv, writeOutput } from "../csv.js";
import { CliError, ExitCode, usageError } from "../exit-codes.js";
import { type Column, print } from "../output.js";

type CdnSource = Schema<"CdnSource">;

const columns: Column<CdnSource>[] = [
  { header: "ID", value: (s) => s.id },
  { header: "URL", value: (s) => s.url },
  { header: "FORMAT", value: (s) => (s.json_path ? `${s.format} ${s.json_path}` : s.format) },
  { header: "ENABLED", value: (s) => s.enabled },
  { header: "PREFIXES", value: (s) => s.last_prefix_count },
  { header: "ERROR", value: (s) => s.last_error },
];

function format(value: string | undefined): "text" | "json" | undefined {
  if (value === undefined || value === "") return undefined;
  if (value === "text" || value === "json") return value;
  throw usageError(`format ${value}: choose text or json`);
}

export function cdnSourcesCommand(program: Command): void {
  const sources = program.command("cdn-sources").alias("cdn-source").description("a module's CDN feeds (URLs of prefix lists): ls, add, rm, import, export");
  const list = (ctx: Awaited<ReturnType<typeof contextOf>>, moduleId: string) =>
    listAll(100_000, (cursor, limit) =>
      unwrap(ctx.client.GET("/v1/modules/{module_id}/cdn-sources", { params: { path: { module_id: moduleId }, query: { cursor, limit } } })),
    );

  sources
    .command("ls <module>")
    .description("list a module's CDN sources")
    .action(async (ref: string, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const items = await list(ctx, (await resolveModule(ctx, ref)).id);
      print(ctx.output, items, items, columns);
    });

  sources
    .command("add <module> <url>")
    .description("add a feed: one prefix a line (text) or JSON with --json-path")
    .option("--format <format>", "text or json", "text")
    .option("--json-path <path>", "json: where the prefixes are, e.g. $.prefixes[*].ip_prefix")
    .option("--allow-empty", "accept an empty feed instead of failing the refresh")
    .option("--disabled", "add it disabled")
    .action(async (ref: string, url: string, opts: { format: string; jsonPath?: string; allowEmpty?: boolean; disabled?: boolean }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const mod = await resolveModule(ctx, ref);
      const body = { url, format: format(opts.format), json_path: opts.jsonPath ?? null, allow_empty: opts.allowEmpty, enabled: !opts.disabled };
      const created = await unwrap(ctx.client.POST("/v1/modules/{module_id}/cdn-sources", { params: { path: { module_id: mod.id } }, body }));
      print(ctx.output, created, [created], columns);
    });

  sources
    .command("rm <module> <source...>")
    .description("delete CDN sources, by id or URL")
    .action(async (ref: string, targets: string[], _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const mod = await resolveModule(ctx, ref);
      const all = targets.every(isUuid) ? [] : await list(ctx, mod.id);
      for (const t of targets) {
        const id = isUuid(t) ? t : all.find((s) => s.url === t)?.id;
        if (!id) throw new CliError(`no CDN source ${t} in module ${mod.name}`, ExitCode.notFound);
        await unwrap(ctx.client.DELETE("/v1/modules/{module_id}/cdn-sources/{source_id}", { params: { path: { module_id: mod.id, source_id: id } } }));
        ctx.output.err(`deleted ${t}\n`);
      }
    });

  sources
    .command("export <module> [file]")
    .description("a module's CDN sources as CSV (url,format,json_path,enabled,allow_empty); - or none: stdout")
    .action(async (ref: string, file: string | undefined, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const items = await list(ctx, (await resolveModule(ctx, ref)).id);
      await writeOutput(
        file,
        toCsv(
          ["url", "format", "json_path", "enabled", "allow_empty"],
          items.map((s) => [s.url, s.format, s.json_path, s.enabled, s.allow_empty]),
        ),
      );
    });

  sources
    .command("import <module> <file>")
    .description("add the CDN sources of a CSV (- reads stdin); URLs already there are left alone")
    .action(async (ref: string, file: string, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const mod = await resolveModule(ctx, ref);
      const existing = new Set((await list(ctx, mod.id)).map((s) => s.url));
      const rows = parseCsv(await readInput(file));
      const created: CdnSource[] = [];
      for (const [i, row] of rows.entries()) {
        if (!row.url) throw usageError(`${file} line ${i + 2}: url is required`);
        if (existing.has(row.url)) continue;
        const body = {
          url: row.url,
          format: format(row.format),
          json_path: row.json_path || null,
          enabled: row.enabled !== "false",
          allow_empty: row.allow_empty === "true",
        };
        created.push(await unwrap(ctx.client.POST("/v1/modules/{module_id}/cdn-sources", { params: { path: { module_id: mod.id } }, body })));
      }
      ctx.output.err(`${created.length} created, ${rows.length - created.length} already there\n`);
      print(ctx.output, created, created, columns);
    });
}
