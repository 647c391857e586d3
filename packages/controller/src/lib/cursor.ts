import { AppError } from "@rlc/shared/errors";

/**
 * Opaque keyset cursors: base64url of a JSON array of the last row's sort key.
 * A cursor that does not decode to the expected shape is a 400 `invalid_cursor`.
 */
export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

export function decodeCursor<T extends "string" | "number">(cursor: string, shape: readonly T[]): (T extends "string" ? string : number)[] {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
  } catch {
    throw new AppError("invalid_cursor", "cursor does not decode");
  }
  if (!Array.isArray(value) || value.length !== shape.length || value.some((v, i) => typeof v !== shape[i])) {
    throw new AppError("invalid_cursor", "cursor does not decode");
  }
  return value as (T extends "string" ? string : number)[];
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
  has_more: boolean;
}

/**
 * Builds a page from `limit + 1` fetched rows: the extra row only says there is more.
 * `keyOf` gives the sort key of the last row returned, which becomes the next cursor.
 */
export function toPage<R, T>(rows: R[], limit: number, keyOf: (row: R) => (string | number)[], map: (row: R) => T): Page<T> {
  const hasMore = rows.length > limit;
  const kept = hasMore ? rows.slice(0, limit) : rows;
  const last = kept[kept.length - 1];
  return {
    items: kept.map(map),
    next_cursor: hasMore && last !== undefined ? encodeCursor(keyOf(last)) : null,
    has_more: hasMore,
  };
}
