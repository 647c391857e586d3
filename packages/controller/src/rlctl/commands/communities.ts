import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { deleteEachCommand, exportCsv, fetchAll, importCommand, listCommand, type PageQuery, printOne, withContext } from "../command-kit.js";
import { type Ctx, resolveCommunity } from "../context.js";
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

  deleteEachCommand(communities, "rm <community...>", "delete communities, by id, value or title", async (ctx, ref) => {
    const c = await resolveCommunity(ctx, ref);
    await unwrap(ctx.client.DELETE("/v1/communities/{id}", { params: { path: { id: c.id } } }));
    return `deleted community ${c.community}`;
  });

  communities
    .command("export [file]")
    .description("communities as CSV (community,title,description); - or none: stdout")
    .action(
      withContext(async (ctx, file: string | undefined) => {
        await exportCsv(file, ["community", "title", "description"], await allCommunities(ctx), (c) => [c.community, c.title, c.description]);
      }),
    );

  importCommand(communities, "create the communities of a CSV (- reads stdin); existing values are left alone", {
    required: ["community"],
    existing: async (ctx) => (await allCommunities(ctx)).map((c) => c.community),
    create: (ctx, row) =>
      unwrap(
        ctx.client.POST("/v1/communities", { body: { community: row.community!, title: row.title || undefined, description: row.description || undefined } }),
      ),
    columns,
  });
}
