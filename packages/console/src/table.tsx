import type { ComponentChildren } from "preact";
import { type FetchResult, ok } from "./api.js";
import { useLoad } from "./ui.js";

/** A column of a DataTable: its header and what a row shows in it. */
export interface Column<T> {
  header: ComponentChildren;
  /** A right-aligned number column: its header and its cells get class `num`. */
  num?: boolean;
  /** Long text that may break anywhere (class `wrap` on the cells). */
  wrap?: boolean;
  /** The cells' data-testid. */
  testId?: string;
  cell: (row: T) => ComponentChildren;
}

/** A column that is there only for some keys (an Actions column for writers): false hides it. */
export type MaybeColumn<T> = Column<T> | false | null;

/** What a header cell needs of a column. */
export type Heading = Pick<Column<unknown>, "header" | "num">;

function shown<C>(columns: (C | false | null)[]): C[] {
  return columns.filter((c): c is C => Boolean(c));
}

/**
 * The frame every list of the console shares: a scrolling box, a table and its header row.
 * The rows come as children (see DataTable for rows drawn from columns).
 */
export function Table(props: {
  testId?: string | undefined;
  loaded?: boolean | undefined;
  caption?: ComponentChildren;
  columns: (Heading | false | null)[];
  children: ComponentChildren;
}) {
  return (
    <div class="scroll">
      <table data-testid={props.testId} data-loaded={props.loaded ? "" : undefined}>
        {props.caption ? <caption>{props.caption}</caption> : null}
        <thead>
          <tr>
            {shown(props.columns).map((c, i) => (
              <th key={i} class={c.num ? "num" : undefined}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}

/** A table with a row per item and a cell per column. */
export function DataTable<T>(props: {
  testId?: string;
  /** Sets data-loaded once the rows are in (a test waits for it). */
  loaded?: boolean;
  /** What the table holds, said above it. */
  caption?: ComponentChildren;
  columns: MaybeColumn<T>[];
  rows: T[] | undefined;
  rowKey: (row: T) => string | number;
  /** Extra attributes of a row's <tr>. */
  rowAttrs?: (row: T) => Record<string, string | number>;
}) {
  const columns = shown(props.columns);
  return (
    <Table testId={props.testId} loaded={props.loaded} caption={props.caption} columns={columns}>
      {(props.rows ?? []).map((row) => (
        <tr key={props.rowKey(row)} {...props.rowAttrs?.(row)}>
          {columns.map((c, i) => (
            <td key={i} class={c.num ? "num" : c.wrap ? "wrap" : undefined} data-testid={c.testId}>
              {c.cell(row)}
            </td>
          ))}
        </tr>
      ))}
    </Table>
  );
}

/** The items of a list route's first page, loaded like useLoad (the routes' limits are set by the caller). */
export function useItems<T>(call: () => Promise<FetchResult<{ items: T[] }>>, deps: unknown[]) {
  return useLoad(async () => (await ok(call())).items, deps);
}
