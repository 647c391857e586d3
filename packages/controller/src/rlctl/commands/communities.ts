import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { contextOf, listAll, positiveInt, resolveCommunity } from "../context.js";
import { parseCsv, readInput, toCsv, writeOutput } from "../csv.js";
import { usageError } from "../exit-codes.js";
import { type Column, print } from "../output.js";

type Community = Schema<"Community">;

const columns: Column<Community>[] = [
  { header: "ID", value: (c) => c.id },
  { header: "COMMUNITY", value: (c) => c.community },
  { header: "TITLE", value: (c) => c.title },
  { header: "DESCRIPTION", value: (c) => c.description },
];

export function communitiesCommand(program: Command): void {
  const communities = program.command("communities").alias("community").description("BGP communities the modules' prefixes carry: ls, add, rm, import, export");

  communities
    .command("ls")
    .description("list communities")
    .option("--limit <n>", "at most this many", positiveInt("--limit"), 5000)
    .action(async (opts: { limit: number }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const items = await listAll(opts.limit, (cursor, limit) => unwrap(ctx.client.GET("/v1/communities", { params: { query: { cursor, limit } } })));
      print(ctx.output, items, items, columns);
    });

  communities
    .command("add <community>")
    .description("create a community (65000:100, or a large one 65000:1:2)")
    .option("--title <title>", "a short name")
    .option("--description <text>", "what it means to the routers")
    .action(async (community: string, opts: { title?: string; description?: string }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const created = await unwrap(ctx.client.POST("/v1/communities", { body: { community, title: opts.title, description: opts.description } }));
      print(ctx.output, created, [created], columns);
    });

  communities
    .command("rm <community...>")
    .description("delete communities, by id, value or title")
    .action(async (refs: string[], _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      for (const ref of refs) {
        const c = await resolveCommunity(ctx, ref);
        await unwrap(ctx.client.DELETE("/v1/communities/{id}", { params: { path: { id: c.id } } }));
        ctx.output.err(`deleted community ${c.community}\n`);
      }
    });

  communities
    .command("export [file]")
    .description("communities as CSV (community,title,description); - or none: stdout")
    .action(async (file: string | undefined, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const items = await listAll(100_000, (cursor, limit) => unwrap(ctx.client.GET("/v1/communities", { params: { query: { cursor, limit } } })));
      await writeOutput(
        file,
        toCsv(
          ["community", "title", "description"],
          items.map((c) => [c.community, c.title, c.description]),
        ),
      );
    });

  communities
    .command("import <file>")
    .description("create the communities of a CSV (- reads stdin); existing values are left alone")
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const rows = parseCsv(await readInput(file));
      const existing = new Set(
        (await listAll(100_000, (cursor, limit) => unwrap(ctx.client.GET("/v1/communities", { params: { query: { cursor, limit } } })))).map(
          (c) => c.community,
        ),
      );
      const created: Community[] = [];
      for (const [i, row] of rows.entries()) {
        if (!row.community) throw usageError(`${file} line ${i + 2}: community is required`);
        if (existing.has(row.community)) continue;
        created.push(
          await unwrap(
            ctx.client.POST("/v1/communities", {
              body: { community: row.community, title: row.title || undefined, description: row.description || undefined },
            }),
          ),
        );
      }
      ctx.output.err(`${created.length} created, ${rows.length - created.length} already there\n`);
      print(ctx.output, created, created, columns);
    });
}
