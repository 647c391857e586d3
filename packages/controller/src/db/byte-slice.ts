import type { Db } from "./connect.js";
import type { Fragment } from "./tenant-table.js";

/**
 * `length` bytes of a bytea column from `offset`, read in the database (a bundle is streamed in
 * slices, never loaded whole); the database clips a run past the end. `from` is the table and
 * the WHERE that picks the one row; undefined when it picks none.
 */
export async function readByteSlice(db: Db, column: string, from: Fragment, offset: number, length: number): Promise<Buffer | undefined> {
  const [r] = await db<{ data: Uint8Array }[]>`SELECT substring(${db(column)} FROM ${offset + 1} FOR ${length}) AS data FROM ${from}`;
  // The embedded database answers bytea as a plain Uint8Array.
  // A row whose column is NULL (a section not written yet: bundle-sections.ts) has no bytes to slice.
  return r?.data ? Buffer.from(r.data.buffer, r.data.byteOffset, r.data.byteLength) : undefined;
}
