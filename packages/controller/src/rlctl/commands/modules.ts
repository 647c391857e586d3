import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { contextOf, listAll, positiveInt, resolveCommunity, resolveModule } from "../context.js";
import { parseCsv, readInput, toCsv, writeOutput } from "../csv.js";
import { usageError } from "../exit-codes.js";
import { type Column, print, printObject } from "../output.js";

type Module = Schema<"Module">;
const TYPES = ["AS_PREFIXES", "DOMAINS", "IP_RANGES"] as const;
type ModuleType = (typeof TYPES)[number];

function moduleType(value: string): ModuleType {
  const t = value.toUpperCase().replace("-", "_");
  const aliases: Record<string, ModuleType> = { AS: "AS_PREFIXES", ASN: "AS_PREFIXES", DOMAIN: "DOMAINS", IP: "IP_RANGES", CIDR: "IP_RANGES" };
  const found = (TYPES as readonly string[]).includes(t) ? (t as ModuleType) : aliases[t];
  if (!found) throw usageError(`--type ${value}: choose AS_PREFIXES, DOMAINS or IP_RANGES`);
  return found;
}

const columns: Column<Module>[] = [
  { header: "ID", value: (m) => m.id },
  { header: "NAME", value: (m) => m.name },
  { header: "TYPE", value: (m) => m.type },
  { header: "ENABLED", value: (m) => m.enabled },
  { header: "REFRESHED", value: (m) => m.last_refreshed_at },
  { header: "ERROR", value: (m) => m.last_refresh_error },
];

export function modulesCommand(program: Command): void {
  const modules = program.command("modules").alias("module").description("route-list modules: ls, add, rm, import, export");

  modules
    .command("ls")
    .description("list modules")
    .option("--type <type>", "only this type (AS_PREFIXES, DOMAINS, IP_RANGES)")
    .option("--limit <n>", "at most this many", positiveInt("--limit"), 500)
    .action(async (opts: { type?: string; limit: number }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const type = opts.type ? moduleType(opts.type) : undefined;
      const items = await listAll(opts.limit, (cursor, limit) => unwrap(ctx.client.GET("/v1/modules", { params: { query: { cursor, limit, type } } })));
      print(ctx.output, items, items, columns);
    });

  modules
    .command("show <module>")
    .description("one module, by id or name")
    .action(async (ref: string, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      printObject(ctx.output, await resolveModule(ctx, ref));
    });

  modules
    .command("add <name>")
    .description("create a module")
    .requiredOption("--type <type>", "AS_PREFIXES, DOMAINS or IP_RANGES (as, domain, ip also do)")
    .option("--community <community>", "the community its prefixes carry (id or value, e.g. 65000:100)")
    .option("--description <text>", "what the list is for")
    .option("--disabled", "create it disabled")
    .action(async (name: string, opts: { type: string; community?: string; description?: string; disabled?: boolean }, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const community_id = opts.community ? (await resolveCommunity(ctx, opts.community)).id : undefined;
      const body = { name, type: moduleType(opts.type), community_id, description: opts.description, enabled: !opts.disabled };
      const created = await unwrap(ctx.client.POST("/v1/modules", { body }));
      print(ctx.output, created, [created], columns);
    });

  modules
    .command("rm <module...>")
    .description("delete modules (by id or name) with their entries and sources")
    .action(async (refs: string[], _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      for (const ref of refs) {
        const mod = await resolveModule(ctx, ref);
        await unwrap(ctx.client.DELETE("/v1/modules/{module_id}", { params: { path: { module_id: mod.id } } }));
        ctx.output.err(`deleted module ${mod.name} (${mod.id})\n`);
      }
    });

  modules
    .command("export [file]")
    .description("modules as CSV (name,type,enabled,community,description); - or none: stdout")
    .action(async (file: string | undefined, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const items = await listAll(100_000, (cursor, limit) => unwrap(ctx.client.GET("/v1/modules", { params: { query: { cursor, limit } } })));
      const communities = await listAll(100_000, (cursor, limit) => unwrap(ctx.client.GET("/v1/communities", { params: { query: { cursor, limit } } })));
      const value = new Map(communities.map((c) => [c.id, c.community]));
      const rows = items.map((m) => [m.name, m.type, m.enabled, m.community_id ? value.get(m.community_id) : "", m.description]);
      await writeOutput(file, toCsv(["name", "type", "enabled", "community", "description"], rows));
    });

  modules
    .command("import <file>")
    .description("create the modules of a CSV (as export writes it; - reads stdin); existing names are left alone")
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const ctx = await contextOf(cmd);
      const rows = parseCsv(await readInput(file));
      const existing = new Set(
        (await listAll(100_000, (cursor, limit) => unwrap(ctx.client.GET("/v1/modules", { params: { query: { cursor, limit } } })))).map((m) => m.name),
      );
      const created: Module[] = [];
      for (const [i, row] of rows.entries()) {
        if (!row.name || !row.type) throw usageError(`${file} line ${i + 2}: name and type are required`);
        if (existing.has(row.name)) continue;
        const community_id = row.community ? (await resolveCommunity(ctx, row.community)).id : undefined;
        const body = { name: row.name, type: moduleType(row.type), enabled: row.enabled !== "false", description: row.description || undefined, community_id };
        created.push(await unwrap(ctx.client.POST("/v1/modules", { body })));
      }
      ctx.output.err(`${created.length} created, ${rows.length - created.length} already there\n`);
      print(ctx.output, created, created, columns);
    });
}
