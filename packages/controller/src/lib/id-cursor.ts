import { AppError } from "@rlc/shared/errors";
import { decodeCursor } from "./cursor.js";

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
