import { stringify as toYaml } from "yaml";
import { usageError } from "./exit-codes.js";

export type Format = "table" | "json" | "yaml";

export function parseFormat(value: string): Format {
  if (value === "table" || value === "json" || value === "yaml") return value;
  throw usageError(`-o ${value}: choose table, json or yaml`);
}

/** A column of a table: its header and how a row shows in it. */
export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
}

/** Columns that each show one field as it is, headers first: `{ ID: "id", "LAST USED": "last_used_at" }`. */
export function fieldColumns<T>(fields: Record<string, keyof T & string>): Column<T>[] {
  return Object.entries(fields).map(([header, key]) => ({ header, value: (row: T) => row[key] }));
}

/** Where a command writes, and how: the format, and whether colour is wanted. */
export interface Output {
  format: Format;
  color: boolean;
  /** Whether stderr is a terminal: progress bars redraw in place there, print lines elsewhere. */
  interactive: boolean;
  out(text: string): void;
  err(text: string): void;
}

/**
 * Colour when stdout is a terminal and NO_COLOR is unset (no-color.org); FORCE_COLOR=1 forces it
 * (what a test or a pager that understands ANSI asks for).
 */
export function wantsColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "0") return true;
  return Boolean(stream.isTTY);
}

const codes = { red: 31, green: 32, yellow: 33, dim: 2, bold: 1 } as const;
export type Colour = keyof typeof codes;

export function paint(o: Pick<Output, "color">, colour: Colour, text: string): string {
  return o.color ? `\x1b[${codes[colour]}m${text}\x1b[0m` : text;
}

function cell(value: unknown): string {
  if (value === null || value === undefined || value === "") return "-";
  if (Array.isArray(value)) return value.length ? value.map(cell).join(",") : "-";
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

const ansi = /\x1b\[[0-9;]*m/g;

/** Columns padded to their widest cell; the last one left unpadded. */
export function table<T>(rows: T[], columns: Column<T>[]): string {
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.replace(ansi, "").length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (i === values.length - 1 ? v : v + " ".repeat(widths[i]! - v.replace(ansi, "").length)))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join("\n");
}

/** Prints `data` as JSON or YAML, or `rows` as a table with `columns`. */
export function print<T>(o: Output, data: unknown, rows: T[], columns: Column<T>[]): void {
  if (o.format === "json") o.out(`${JSON.stringify(data, null, 2)}\n`);
  else if (o.format === "yaml") o.out(toYaml(data));
  else o.out(rows.length ? `${table(rows, columns)}\n` : "(none)\n");
}

/** One object as JSON, YAML or a two-column table of its fields. */
export function printObject(o: Output, data: Record<string, unknown>, fields?: string[]): void {
  const keys = fields ?? Object.keys(data);
  print(o, data, keys, [
    { header: "FIELD", value: (k) => k },
    { header: "VALUE", value: (k) => data[k] },
  ]);
}
