import { type FetchResult, type Schema, unwrap } from "@rlc/client";
import { type Command, Option } from "commander";
import { type Ctx, contextOf, isUuid, listAll, positiveInt, resolveModule } from "./context.js";
import { parseCsv, readInput, toCsv, writeOutput } from "./csv.js";
import { CliError, ExitCode, usageError } from "./exit-codes.js";
import { type Column, print } from "./output.js";

// The shapes most rlctl commands share: an action that needs the controller, a paged list
// printed as a table, a CSV export, an import that creates only what is not there yet, and the
// deletes (each argument resolved and deleted, or a module's rows by id or value).

/**
 * The action of a command that talks to the controller. Commander calls an action with the
 * command's arguments, then its options, then the command itself; `run` gets the context first
 * (made before anything else, so a missing key fails with exit 3 whatever the arguments),
 * then the arguments and the options.
 */
export function withContext<A extends unknown[]>(run: (ctx: Ctx, ...args: A) => Promise<void>): (...args: [...A, Command]) => Promise<void> {
  return async (...args) => {
    const cmd = args.at(-1) as Command;
    await run(await contextOf(cmd), ...(args.slice(0, -1) as A));
  };
}

/** Prints a list as JSON, YAML or a table with `columns`. */
export function printRows<T>(ctx: Ctx, rows: T[], columns: Column<T>[]): void {
  print(ctx.output, rows, rows, columns);
}

/** Prints one object as JSON, YAML or a one-row table with `columns`. */
export function printOne<T>(ctx: Ctx, row: T, columns: Column<T>[]): void {
  print(ctx.output, row, [row], columns);
}

interface Page<T> {
  items: T[];
  next_cursor: string | null;
  has_more: boolean;
}

/** The cursor and page size of one call of a paged route. */
export interface PageQuery {
  cursor: string | undefined;
  limit: number;
}

/** Every item of a paged route, up to `max`; `page` makes one call of it. */
export function fetchAll<T>(max: number, page: (query: PageQuery) => Promise<FetchResult<Page<T>>>): Promise<T[]> {
  return listAll(max, (cursor, limit) => unwrap(page({ cursor, limit })));
}

/** `--limit <n>`, the option of every list that stops after n items. */
export function limitOption(defaultValue?: number, description = "at most this many"): Option {
  return new Option("--limit <n>", description).default(defaultValue).argParser(positiveInt("--limit"));
}

export interface ListSpec<T, O> {
  description: string;
  /** Filters, declared before --limit: `[flags, description]`. */
  filters?: [string, string][];
  /** The default of --limit; without it the command has no --limit and lists up to `max` (5000 unless given). */
  limit?: number;
  max?: number;
  /** One call of the paged route, with the command's options for its filters. */
  page: (ctx: Ctx, query: PageQuery, opts: O) => Promise<FetchResult<Page<T>>>;
  columns: Column<T>[] | ((ctx: Ctx) => Column<T>[]);
}

/** A command that lists a paged route (following its cursor) and prints the items. */
export function listCommand<T, O = object>(parent: Command, name: string, spec: ListSpec<T, O>): Command {
  const cmd = parent.command(name).description(spec.description);
  for (const [flags, description] of spec.filters ?? []) cmd.option(flags, description);
  if (spec.limit !== undefined) cmd.addOption(limitOption(spec.limit));
  return cmd.action(
    withContext(async (ctx, opts: O & { limit?: number }) => {
      const items = await fetchAll(opts.limit ?? spec.max ?? 5000, (query) => spec.page(ctx, query, opts));
      printRows(ctx, items, typeof spec.columns === "function" ? spec.columns(ctx) : spec.columns);
    }),
  );
}

/** Writes `rows` as CSV under `header` to a file, or to stdout for none or `-`. */
export function exportCsv<T>(file: string | undefined, header: string[], items: T[], row: (item: T) => unknown[]): Promise<void> {
  return writeOutput(file, toCsv(header, items.map(row)));
}

export interface ImportSpec<T> {
  /** The CSV file's name, for the messages. */
  file: string;
  /** The columns a row must fill; the first one names the row and is matched against `existing`. */
  required: string[];
  /** The names already there: their rows are left alone. */
  existing: Set<string>;
  create: (row: Record<string, string>) => Promise<T>;
  columns: Column<T>[];
}

/** Creates the rows of a CSV whose names are not there yet, says how many, and prints what it made. */
export async function importMissing<T>(ctx: Ctx, rows: Record<string, string>[], spec: ImportSpec<T>): Promise<void> {
  const [key] = spec.required;
  const created: T[] = [];
  for (const [i, row] of rows.entries()) {
    if (!spec.required.every((k) => row[k]))
      throw usageError(`${spec.file} line ${i + 2}: ${spec.required.join(" and ")} ${spec.required.length > 1 ? "are" : "is"} required`);
    if (spec.existing.has(row[key!]!)) continue;
    created.push(await spec.create(row));
  }
  ctx.output.err(`${created.length} created, ${rows.length - created.length} already there\n`);
  printRows(ctx, created, spec.columns);
}

export interface TopImportSpec<T> {
  required: string[];
  /** The names already there, read after the file. */
  existing: (ctx: Ctx) => Promise<string[]>;
  create: (ctx: Ctx, row: Record<string, string>) => Promise<T>;
  columns: Column<T>[];
}

/** `import <file>`: reads a CSV (`-`: stdin) and creates its rows whose names are not there yet. */
export function importCommand<T>(parent: Command, description: string, spec: TopImportSpec<T>): Command {
  return parent
    .command("import <file>")
    .description(description)
    .action(
      withContext(async (ctx, file: string) => {
        const rows = parseCsv(await readInput(file));
        const existing = new Set(await spec.existing(ctx));
        await importMissing(ctx, rows, { file, required: spec.required, existing, create: (row) => spec.create(ctx, row), columns: spec.columns });
      }),
    );
}

/** `rm <x...>`: deletes what each argument names, one by one; `remove` answers the line said on stderr. */
export function deleteEachCommand(parent: Command, usage: string, description: string, remove: (ctx: Ctx, ref: string) => Promise<string>): Command {
  return parent
    .command(usage)
    .description(description)
    .action(
      withContext(async (ctx, refs: string[]) => {
        for (const ref of refs) ctx.output.err(`${await remove(ctx, ref)}\n`);
      }),
    );
}

export interface RemoveSpec<R> {
  /** What a target names, for the message when there is none: `entry`, `CDN source`. */
  noun: string;
  /** The module's rows, read only when a target is not an id. */
  list: (ctx: Ctx, mod: Schema<"Module">) => Promise<R[]>;
  /** The id of the row a target that is not an id names, if any. */
  idOf: (rows: R[], target: string) => string | undefined;
  remove: (ctx: Ctx, mod: Schema<"Module">, id: string) => Promise<void>;
}

/** `rm <module> <x...>`: deletes rows of a module named by id or by value, one by one, saying each on stderr. */
export function removeCommand<R>(parent: Command, usage: string, description: string, spec: RemoveSpec<R>): Command {
  return parent
    .command(usage)
    .description(description)
    .action(
      withContext(async (ctx, ref: string, targets: string[]) => {
        const mod = await resolveModule(ctx, ref);
        const rows = targets.every(isUuid) ? [] : await spec.list(ctx, mod);
        for (const t of targets) {
          const id = isUuid(t) ? t : spec.idOf(rows, t);
          if (!id) throw new CliError(`no ${spec.noun} ${t} in module ${mod.name}`, ExitCode.notFound);
          await spec.remove(ctx, mod, id);
          ctx.output.err(`deleted ${t}\n`);
        }
      }),
    );
}
