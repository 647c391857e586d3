import { type Schema, unwrap } from "@rlc/client";
import type { Command } from "commander";
import { fetchAll, limitOption, printRows, removeCommand, withContext } from "../command-kit.js";
import { type Ctx, resolveModule } from "../context.js";
import { readInput, writeOutput } from "../csv.js";
import { CliError, ExitCode, usageError } from "../exit-codes.js";
import { type Column, print } from "../output.js";

type Module = Schema<"Module">;
/** An entry of any of the four kinds, with its value in one column. */
interface Entry {
  id: string;
  value: string;
  comment: string;
  created_at: string;
}

async function listEntries(ctx: Ctx, mod: Module, max: number): Promise<{ raw: unknown[]; rows: Entry[] }> {
  const path = { module_id: mod.id };
  if (mod.type === "AS_PREFIXES") {
    const raw = await fetchAll(max, (query) => ctx.client.GET("/v1/modules/{module_id}/as-entries", { params: { path, query } }));
    return { raw, rows: raw.map((e) => ({ ...e, value: asValue(e) })) };
  }
  if (mod.type === "DOMAINS") {
    const raw = await fetchAll(max, (query) => ctx.client.GET("/v1/modules/{module_id}/domain-entries", { params: { path, query } }));
    return { raw, rows: raw.map((e) => ({ ...e, value: e.include_subdomains ? `*.${e.domain}` : e.domain })) };
  }
  if (mod.type === "COUNTRY") {
    const raw = await fetchAll(max, (query) => ctx.client.GET("/v1/modules/{module_id}/country-entries", { params: { path, query } }));
    return { raw, rows: raw.map((e) => ({ ...e, value: e.country })) };
  }
  const raw = await fetchAll(max, (query) => ctx.client.GET("/v1/modules/{module_id}/ip-range-entries", { params: { path, query } }));
  return { raw, rows: raw.map((e) => ({ ...e, value: e.cidr })) };
}

/** An AS entry's value as shown: AS65000, or the AS-SET's name. */
const asValue = (e: { asn: number | null }): string => (e as { as_set?: string | null }).as_set ?? `AS${e.asn}`;

async function addEntry(ctx: Ctx, mod: Module, value: string, opts: { comment?: string; subdomains?: boolean }): Promise<Entry> {
  const path = { module_id: mod.id };
  const comment = opts.comment;
  if (mod.type === "AS_PREFIXES") {
    // An AS-SET (AS-EXAMPLE, AS64500:AS-CUSTOMERS, RIPE::AS-EXAMPLE) is expanded through IRR by the controller.
    if (/^(?:[A-Z0-9_-]+::)?(?:AS\d+:)*AS-/i.test(value)) {
      const e = await unwrap(ctx.client.POST("/v1/modules/{module_id}/as-entries", { params: { path }, body: { as_set: value, comment } as never }));
      return { ...e, value: asValue(e) };
    }
    const asn = Number(value.replace(/^AS/i, ""));
    if (!Number.isInteger(asn) || asn < 0) throw usageError(`${value} is not an AS number (65000 or AS65000) or an AS-SET (AS-EXAMPLE)`);
    const e = await unwrap(ctx.client.POST("/v1/modules/{module_id}/as-entries", { params: { path }, body: { asn, comment } }));
    return { ...e, value: asValue(e) };
  }
  if (mod.type === "DOMAINS") {
    const wildcard = value.startsWith("*.");
    const body = { domain: wildcard ? value.slice(2) : value, include_subdomains: opts.subdomains || wildcard || undefined, comment };
    const e = await unwrap(ctx.client.POST("/v1/modules/{module_id}/domain-entries", { params: { path }, body }));
    return { ...e, value: e.include_subdomains ? `*.${e.domain}` : e.domain };
  }
  if (mod.type === "COUNTRY") {
    const e = await unwrap(ctx.client.POST("/v1/modules/{module_id}/country-entries", { params: { path }, body: { country: value, comment } }));
    return { ...e, value: e.country };
  }
  const e = await unwrap(ctx.client.POST("/v1/modules/{module_id}/ip-range-entries", { params: { path }, body: { cidr: value, comment } }));
  return { ...e, value: e.cidr };
}

async function deleteEntry(ctx: Ctx, mod: Module, entryId: string): Promise<void> {
  const path = { module_id: mod.id, entry_id: entryId };
  if (mod.type === "AS_PREFIXES") await unwrap(ctx.client.DELETE("/v1/modules/{module_id}/as-entries/{entry_id}", { params: { path } }));
  else if (mod.type === "DOMAINS") await unwrap(ctx.client.DELETE("/v1/modules/{module_id}/domain-entries/{entry_id}", { params: { path } }));
  else if (mod.type === "COUNTRY") await unwrap(ctx.client.DELETE("/v1/modules/{module_id}/country-entries/{entry_id}", { params: { path } }));
  else await unwrap(ctx.client.DELETE("/v1/modules/{module_id}/ip-range-entries/{entry_id}", { params: { path } }));
}

const columns = [
  { header: "ID", value: (e: Entry) => e.id },
  { header: "VALUE", value: (e: Entry) => e.value },
  { header: "COMMENT", value: (e: Entry) => e.comment },
];

/** What an import did: counts, and the number of lines refused (listed on stderr). */
const importColumns: Column<{ created: number; updated: number; deleted: number; unchanged: number; errors: number }>[] = [
  { header: "CREATED", value: (r) => r.created },
  { header: "UPDATED", value: (r) => r.updated },
  { header: "DELETED", value: (r) => r.deleted },
  { header: "UNCHANGED", value: (r) => r.unchanged },
  { header: "ERRORS", value: (r) => r.errors },
];

export function entriesCommand(program: Command): void {
  const entries = program
    .command("entries")
    .alias("entry")
    .description("a module's entries (AS numbers, domains, IP ranges or countries): ls, add, rm, import, export");

  entries
    .command("ls <module>")
    .description("list a module's entries")
    .addOption(limitOption(10_000))
    .action(
      withContext(async (ctx, ref: string, opts: { limit: number }) => {
        const { raw, rows } = await listEntries(ctx, await resolveModule(ctx, ref), opts.limit);
        print(ctx.output, raw, rows, columns);
      }),
    );

  entries
    .command("add <module> <value...>")
    .description(
      "add entries: AS numbers (65000, AS65000) or AS-SETs (AS-EXAMPLE, RIPE::AS-EXAMPLE), domains (*.example.com for subdomains), CIDRs or countries (NL), as the module's type says",
    )
    .option("--comment <text>", "a note kept with each entry")
    .option("--subdomains", "domains: include their subdomains")
    .action(
      withContext(async (ctx, ref: string, values: string[], opts: { comment?: string; subdomains?: boolean }) => {
        const mod = await resolveModule(ctx, ref);
        const added: Entry[] = [];
        for (const v of values) added.push(await addEntry(ctx, mod, v, opts));
        printRows(ctx, added, columns);
      }),
    );

  removeCommand(entries, "rm <module> <entry...>", "delete entries, by id or by value", {
    noun: "entry",
    list: async (ctx, mod) => (await listEntries(ctx, mod, 100_000)).rows,
    idOf: (rows, t) => rows.find((r) => r.value.toLowerCase() === t.toLowerCase() || r.value === `AS${t}`)?.id,
    remove: deleteEntry,
  });

  entries
    .command("export <module> [file]")
    .description("the module's entries as the controller's CSV; - or none: stdout")
    .action(
      withContext(async (ctx, ref: string, file: string | undefined) => {
        const mod = await resolveModule(ctx, ref);
        const res = await ctx.client.GET("/v1/modules/{module_id}/entries.csv", { params: { path: { module_id: mod.id } }, parseAs: "text" });
        await writeOutput(file, await unwrap(res));
      }),
    );

  entries
    .command("import <module> <file>")
    .description("import entries from CSV (- reads stdin)")
    .option("--replace", "make the entries exactly the file's (default: add and update)")
    .option("--dry-run", "say what would change, change nothing")
    .action(
      withContext(async (ctx, ref: string, file: string, opts: { replace?: boolean; dryRun?: boolean }) => {
        const mod = await resolveModule(ctx, ref);
        const csv = await readInput(file);
        const result = await unwrap(
          ctx.client.POST("/v1/modules/{module_id}/entries.csv", {
            params: { path: { module_id: mod.id }, query: { mode: opts.replace ? "replace" : "merge", dry_run: opts.dryRun ? "true" : undefined } },
            body: csv,
            bodySerializer: (b: string) => b,
            headers: { "content-type": "text/csv" },
          }),
        );
        print(ctx.output, result, [{ ...result, errors: result.errors.length }], importColumns);
        for (const e of result.errors) ctx.output.err(`line ${e.line} ${e.path} ${e.value}: ${e.message}\n`);
        if (result.errors.length) throw new CliError(`${result.errors.length} line(s) refused`, ExitCode.refused);
      }),
    );
}
