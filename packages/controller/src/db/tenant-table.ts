import type postgres from "postgres";
import type { Db } from "./connect.js";

/** A piece of SQL built with db`…`, put into a query where it stands. */
export type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** A page of a collection read newest first: the rows below the cursor's id, at most `limit`. */
export interface KeysetPage {
  afterId: string | null;
  limit: number;
}

/**
 * The end of a page query: below the cursor's id, newest id first, and one row more than the
 * limit so the caller can tell whether another page follows. `id` is the id column, qualified
 * where the query joins.
 */
export function keysetPage(db: Db, page: KeysetPage, id: Fragment = db`id`): Fragment {
  return db`${page.afterId === null ? db`` : db`AND ${id} < ${page.afterId}`} ORDER BY ${id} DESC LIMIT ${page.limit + 1}`;
}

/** `AND column = value` for a filter the caller gave; nothing for one it left out. */
export function whereEquals(db: Db, column: string, value: string | boolean | undefined): Fragment {
  return value === undefined ? db`` : db`AND ${db(column)} = ${value}`;
}

/**
 * The statements every table of a tenant's resources has, named by a uuid `id`: by id, by the
 * column unique in the tenant (`nameColumn`), a page, all, an update, a delete. What is particular
 * to a table (its insert, the columns an update sets, its filters) stays with the table.
 */
export function tenantTable<Row extends object>(name: string, nameColumn = "name") {
  return {
    /** FOR UPDATE when the caller is about to change the row in its transaction. */
    async findById(db: Db, tenantId: string, id: string, forUpdate = false): Promise<Row | undefined> {
      const [row] = await db<Row[]>`SELECT * FROM ${db(name)} WHERE tenant_id = ${tenantId} AND id = ${id} ${forUpdate ? db`FOR UPDATE` : db``}`;
      return row;
    },
    async findByName(db: Db, tenantId: string, value: string): Promise<Row | undefined> {
      const [row] = await db<Row[]>`SELECT * FROM ${db(name)} WHERE tenant_id = ${tenantId} AND ${db(nameColumn)} = ${value}`;
      return row;
    },
    /** `filters` are `AND …` conditions (whereEquals, or the table's own). */
    list(db: Db, tenantId: string, page: KeysetPage, filters: Fragment = db``): Promise<Row[]> {
      return db<Row[]>`SELECT * FROM ${db(name)} WHERE tenant_id = ${tenantId} ${filters} ${keysetPage(db, page)}`;
    },
    /** Oldest first: what a bundle or the catalog reads. */
    listAll(db: Db, tenantId: string): Promise<Row[]> {
      return db<Row[]>`SELECT * FROM ${db(name)} WHERE tenant_id = ${tenantId} ORDER BY id`;
    },
    /** `set` is the SET list; the caller has found (and locked) the row, so it is there. */
    async update(db: Db, tenantId: string, id: string, set: Fragment): Promise<Row> {
      const [row] = await db<Row[]>`UPDATE ${db(name)} SET ${set} WHERE tenant_id = ${tenantId} AND id = ${id} RETURNING *`;
      return row!;
    },
    async deleteById(db: Db, tenantId: string, id: string): Promise<void> {
      await db`DELETE FROM ${db(name)} WHERE tenant_id = ${tenantId} AND id = ${id}`;
    },
  };
}
