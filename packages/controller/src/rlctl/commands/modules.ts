import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { deleteEachCommand, exportCsv, fetchAll, importCommand, listCommand, printOne, withContext } from "../command-kit.js";
import { type Ctx, resolveCommunity, resolveModule } from "../context.js";
import { usageError } from "../exit-codes.js";
import { fieldColumns, printObject } from "../output.js";

type Module = Schema<"Module">;
const TYPES = ["AS_PREFIXES", "DOMAINS", "IP_RANGES", "COUNTRY"] as const;
type ModuleType = (typeof TYPES)[number];

function moduleType(value: string): ModuleType {
  const t = value.toUpperCase().replace("-", "_");
  const aliases: Record<string, ModuleType> = {
    AS: "AS_PREFIXES",
    ASN: "AS_PREFIXES",
    DOMAIN: "DOMAINS",
    IP: "IP_RANGES",
    CIDR: "IP_RANGES",
    COUNTRIES: "COUNTRY",
  };
  const found = (TYPES as readonly string[]).includes(t) ? (t as ModuleType) : aliases[t];
  if (!found) throw usageError(`--type ${value}: choose AS_PREFIXES, DOMAINS, IP_RANGES or COUNTRY`);
  return found;
}

function moduleAction(value: string): "announce" | "exclude" {
  if (value !== "announce" && value !== "exclude") throw usageError(`--action ${value}: choose announce or exclude`);
  return value;
}

type RpkiPolicy = Module["rpki_policy"];
const RPKI_POLICIES: readonly RpkiPolicy[] = ["off", "report", "drop_invalid"];

function rpkiPolicy(value: string): RpkiPolicy {
  if (!(RPKI_POLICIES as readonly string[]).includes(value)) throw usageError(`--rpki-policy ${value}: choose off, report or drop_invalid`);
  return value as RpkiPolicy;
}

/** --max-stale-hours: hours, `forever` (null) or `tenant` (the tenant's source_max_stale_hours). */
function maxStaleHours(value: string): number | null | "tenant" {
  if (value === "forever") return null;
  if (value === "tenant") return "tenant";
  const hours = Number(value);
  if (!Number.isInteger(hours) || hours < 1 || hours > 87600) throw usageError(`--max-stale-hours ${value}: hours from 1 to 87600, forever or tenant`);
  return hours;
}

const columns = fieldColumns<Module>({
  ID: "id",
  NAME: "name",
  TYPE: "type",
  ENABLED: "enabled",
  RPKI: "rpki_policy",
  ACTION: "action",
  REFRESHED: "last_refreshed_at",
  ERROR: "last_refresh_error",
});

const allModules = (ctx: Ctx) => fetchAll(100_000, (query) => ctx.client.GET("/v1/modules", { params: { query } }));

export function modulesCommand(program: Command): void {
  const modules = program.command("modules").alias("module").description("route-list modules: ls, show, add, set, rm, import, export");

  listCommand(modules, "ls", {
    description: "list modules",
    filters: [["--type <type>", "only this type (AS_PREFIXES, DOMAINS, IP_RANGES, COUNTRY)"]],
    limit: 500,
    page: (ctx, query, opts: { type?: string }) =>
      ctx.client.GET("/v1/modules", { params: { query: { ...query, type: opts.type ? moduleType(opts.type) : undefined } } }),
    columns,
  });

  modules
    .command("show <module>")
    .description("one module, by id or name")
    .action(
      withContext(async (ctx, ref: string) => {
        printObject(ctx.output, await resolveModule(ctx, ref));
      }),
    );

  modules
    .command("add <name>")
    .description("create a module")
    .requiredOption("--type <type>", "AS_PREFIXES, DOMAINS, IP_RANGES or COUNTRY (as, domain, ip, country also do)")
    .option("--community <community>", "the community its prefixes carry (id or value, e.g. 65000:100)")
    .option("--description <text>", "what the list is for")
    .option("--disabled", "create it disabled")
    .option("--rpki-policy <policy>", "RPKI origin validation of its AS entries' prefixes: off (default), report or drop_invalid")
    .option("--action <action>", "announce (default) its prefixes, or exclude them from everything the tenant announces")
    .option("--max-stale-hours <hours>", "hours a failed source's last good records are kept: a number, forever, or tenant (default: the tenant's setting)")
    .action(
      withContext(
        async (
          ctx,
          name: string,
          opts: { type: string; community?: string; description?: string; disabled?: boolean; rpkiPolicy?: string; action?: string; maxStaleHours?: string },
        ) => {
          const community_id = opts.community ? (await resolveCommunity(ctx, opts.community)).id : undefined;
          const body = {
            name,
            type: moduleType(opts.type),
            community_id,
            description: opts.description,
            enabled: !opts.disabled,
            ...(opts.rpkiPolicy ? { rpki_policy: rpkiPolicy(opts.rpkiPolicy) } : {}),
            ...(opts.action ? { action: moduleAction(opts.action) } : {}),
            ...(opts.maxStaleHours ? { max_stale_hours: maxStaleHours(opts.maxStaleHours) } : {}),
          };
          printOne(ctx, await unwrap(ctx.client.POST("/v1/modules", { body })), columns);
        },
      ),
    );

  modules
    .command("set <module>")
    .description("change a module (by id or name): its RPKI policy, description, or whether it is enabled")
    .option("--rpki-policy <policy>", "off, report or drop_invalid")
    .option("--description <text>", "what the list is for")
    .option("--enable", "enable it")
    .option("--disable", "disable it")
    .action(
      withContext(async (ctx, ref: string, opts: { rpkiPolicy?: string; description?: string; enable?: boolean; disable?: boolean }) => {
        if (opts.enable && opts.disable) throw usageError("--enable and --disable: choose one");
        const body = {
          ...(opts.rpkiPolicy ? { rpki_policy: rpkiPolicy(opts.rpkiPolicy) } : {}),
          ...(opts.description !== undefined ? { description: opts.description } : {}),
          ...(opts.enable || opts.disable ? { enabled: Boolean(opts.enable) } : {}),
        };
        if (!Object.keys(body).length) throw usageError("nothing to change: give --rpki-policy, --description, --enable or --disable");
        const mod = await resolveModule(ctx, ref);
        printOne(ctx, await unwrap(ctx.client.PATCH("/v1/modules/{module_id}", { params: { path: { module_id: mod.id } }, body })), columns);
      }),
    );

  deleteEachCommand(modules, "rm <module...>", "delete modules (by id or name) with their entries and sources", async (ctx, ref) => {
    const mod = await resolveModule(ctx, ref);
    await unwrap(ctx.client.DELETE("/v1/modules/{module_id}", { params: { path: { module_id: mod.id } } }));
    return `deleted module ${mod.name} (${mod.id})`;
  });

  modules
    .command("export [file]")
    .description("modules as CSV (name,type,enabled,community,description); - or none: stdout")
    .action(
      withContext(async (ctx, file: string | undefined) => {
        const items = await allModules(ctx);
        const communities = await fetchAll(100_000, (query) => ctx.client.GET("/v1/communities", { params: { query } }));
        const value = new Map(communities.map((c) => [c.id, c.community]));
        const row = (m: Module) => [m.name, m.type, m.enabled, m.community_id ? value.get(m.community_id) : "", m.description];
        await exportCsv(file, ["name", "type", "enabled", "community", "description"], items, row);
      }),
    );

  importCommand(modules, "create the modules of a CSV (as export writes it; - reads stdin); existing names are left alone", {
    required: ["name", "type"],
    existing: async (ctx) => (await allModules(ctx)).map((m) => m.name),
    create: async (ctx, row) => {
      const community_id = row.community ? (await resolveCommunity(ctx, row.community)).id : undefined;
      const body = { name: row.name!, type: moduleType(row.type!), enabled: row.enabled !== "false", description: row.description || undefined, community_id };
      return unwrap(ctx.client.POST("/v1/modules", { body }));
    },
    columns,
  });
}
