import { AppError } from "@rlc/shared/errors";
import { decodeCursor, type Page, toPage } from "./cursor.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The id an id-ordered list's cursor carries, or null without a cursor. A cursor that decodes
 * but holds no UUID is `invalid_cursor` too: it must never reach a uuid comparison in SQL.
 */
export function afterIdOf(cursor: string | undefined): string | null {
  if (cursor === undefined) return null;
  const [id] = decodeCursor(cursor, ["string"]);
  if (id === undefined || !UUID.test(id)) throw new AppError("invalid_cursor", "cursor does not decode");
  return id;
}

/**
 * A page of an id-ordered list: `read` is given the cursor's id (null: the first page) and
 * fetches up to `limit + 1` rows after it; the last row returned is the next cursor.
 */
export async function pageById<R extends { id: string }, T>(
  q: { cursor?: string | undefined; limit: number },
  read: (afterId: string | null) => Promise<R[]>,
  map: (row: R) => T,
): Promise<Page<T>> {
  return toPage(await read(afterIdOf(q.cursor)), q.limit, (r) => [r.id], map);
}
