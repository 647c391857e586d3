import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { exportCsv, fetchAll, importMissing, printOne, printRows, removeCommand, withContext } from "../command-kit.js";
import { type Ctx, resolveModule } from "../context.js";
import { parseCsv, readInput } from "../csv.js";
import { usageError } from "../exit-codes.js";
import type { Column } from "../output.js";

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

const list = (ctx: Ctx, moduleId: string) =>
  fetchAll(100_000, (query) => ctx.client.GET("/v1/modules/{module_id}/cdn-sources", { params: { path: { module_id: moduleId }, query } }));

export function cdnSourcesCommand(program: Command): void {
  const sources = program.command("cdn-sources").alias("cdn-source").description("a module's CDN feeds (URLs of prefix lists): ls, add, rm, import, export");

  sources
    .command("ls <module>")
    .description("list a module's CDN sources")
    .action(
      withContext(async (ctx, ref: string) => {
        printRows(ctx, await list(ctx, (await resolveModule(ctx, ref)).id), columns);
      }),
    );

  sources
    .command("add <module> <url>")
    .description("add a feed: one prefix a line (text) or JSON with --json-path")
    .option("--format <format>", "text or json", "text")
    .option("--json-path <path>", "json: where the prefixes are, e.g. $.prefixes[*].ip_prefix")
    .option("--allow-empty", "accept an empty feed instead of failing the refresh")
    .option("--disabled", "add it disabled")
    .action(
      withContext(async (ctx, ref: string, url: string, opts: { format: string; jsonPath?: string; allowEmpty?: boolean; disabled?: boolean }) => {
        const mod = await resolveModule(ctx, ref);
        const body = { url, format: format(opts.format), json_path: opts.jsonPath ?? null, allow_empty: opts.allowEmpty, enabled: !opts.disabled };
        printOne(ctx, await unwrap(ctx.client.POST("/v1/modules/{module_id}/cdn-sources", { params: { path: { module_id: mod.id } }, body })), columns);
      }),
    );

  removeCommand(sources, "rm <module> <source...>", "delete CDN sources, by id or URL", {
    noun: "CDN source",
    list: (ctx, mod) => list(ctx, mod.id),
    idOf: (all, url) => all.find((s) => s.url === url)?.id,
    remove: async (ctx, mod, id) => {
      await unwrap(ctx.client.DELETE("/v1/modules/{module_id}/cdn-sources/{source_id}", { params: { path: { module_id: mod.id, source_id: id } } }));
    },
  });

  sources
    .command("export <module> [file]")
    .description("a module's CDN sources as CSV (url,format,json_path,enabled,allow_empty); - or none: stdout")
    .action(
      withContext(async (ctx, ref: string, file: string | undefined) => {
        const items = await list(ctx, (await resolveModule(ctx, ref)).id);
        await exportCsv(file, ["url", "format", "json_path", "enabled", "allow_empty"], items, (s) => [s.url, s.format, s.json_path, s.enabled, s.allow_empty]);
      }),
    );

  sources
    .command("import <module> <file>")
    .description("add the CDN sources of a CSV (- reads stdin); URLs already there are left alone")
    .action(
      withContext(async (ctx, ref: string, file: string) => {
        const mod = await resolveModule(ctx, ref);
        const existing = new Set((await list(ctx, mod.id)).map((s) => s.url));
        const rows = parseCsv(await readInput(file));
        await importMissing(ctx, rows, {
          file,
          required: ["url"],
          existing,
          create: (row) => {
            const body = {
              url: row.url!,
              format: format(row.format),
              json_path: row.json_path || null,
              enabled: row.enabled !== "false",
              allow_empty: row.allow_empty === "true",
            };
            return unwrap(ctx.client.POST("/v1/modules/{module_id}/cdn-sources", { params: { path: { module_id: mod.id } }, body }));
          },
          columns,
        });
      }),
    );
}
