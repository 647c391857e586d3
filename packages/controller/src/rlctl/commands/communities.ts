import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { exportCsv, fetchAll, importMissing, listCommand, type PageQuery, printOne, withContext } from "../command-kit.js";
import { type Ctx, resolveCommunity } from "../context.js";
import { parseCsv, readInput } from "../csv.js";
import { fieldColumns } from "../output.js";

type Community = Schema<"Community">;

const columns = fieldColumns<Community>({ ID: "id", COMMUNITY: "community", TITLE: "title", DESCRIPTION: "description" });

const communityPage = (ctx: Ctx, query: PageQuery) => ctx.client.GET("/v1/communities", { params: { query } });
const allCommunities = (ctx: Ctx) => fetchAll(100_000, (query) => communityPage(ctx, query));

export function communitiesCommand(program: Command): void {
  const communities = program.command("communities").alias("community").description("BGP communities the modules' prefixes carry: ls, add, rm, import, export");

  listCommand(communities, "ls", {
    description: "list communities",
    limit: 5000,
    page: communityPage,
    columns,
  });

  communities
    .command("add <community>")
    .description("create a community (65000:100, or a large one 65000:1:2)")
    .option("--title <title>", "a short name")
    .option("--description <text>", "what it means to the routers")
    .action(
      withContext(async (ctx, community: string, opts: { title?: string; description?: string }) => {
        const created = await unwrap(ctx.client.POST("/v1/communities", { body: { community, title: opts.title, description: opts.description } }));
        printOne(ctx, created, columns);
      }),
    );

  communities
    .command("rm <community...>")
    .description("delete communities, by id, value or title")
    .action(
      withContext(async (ctx, refs: string[]) => {
        for (const ref of refs) {
          const c = await resolveCommunity(ctx, ref);
          await unwrap(ctx.client.DELETE("/v1/communities/{id}", { params: { path: { id: c.id } } }));
          ctx.output.err(`deleted community ${c.community}\n`);
        }
      }),
    );

  communities
    .command("export [file]")
    .description("communities as CSV (community,title,description); - or none: stdout")
    .action(
      withContext(async (ctx, file: string | undefined) => {
        await exportCsv(file, ["community", "title", "description"], await allCommunities(ctx), (c) => [c.community, c.title, c.description]);
      }),
    );

  communities
    .command("import <file>")
    .description("create the communities of a CSV (- reads stdin); existing values are left alone")
    .action(
      withContext(async (ctx, file: string) => {
        const rows = parseCsv(await readInput(file));
        const existing = new Set((await allCommunities(ctx)).map((c) => c.community));
        await importMissing(ctx, rows, {
          file,
          required: ["community"],
          existing,
          create: (row) =>
            unwrap(
              ctx.client.POST("/v1/communities", {
                body: { community: row.community!, title: row.title || undefined, description: row.description || undefined },
              }),
            ),
          columns,
        });
      }),
    );
}
