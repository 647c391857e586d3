import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { guardPool, outsideTransaction, PoolInTransactionError } from "./connect.js";

const url = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let sql: postgres.Sql;
beforeAll(() => {
  sql = guardPool(postgres(url, { max: 2, onnotice: () => {} }));
});
afterAll(async () => sql?.end({ timeout: 1 }));

describe("guardPool", () => {
  it("refuses a pool query, a second transaction or unsafe inside a transaction, and rolls the transaction back", async () => {
    await expect(sql.begin(async () => sql`SELECT 1`)).rejects.toBeInstanceOf(PoolInTransactionError);
    await expect(sql.begin(async () => sql.begin(async (tx) => tx`SELECT 1`))).rejects.toBeInstanceOf(PoolInTransactionError);
    await expect(sql.begin(async () => sql.unsafe("SELECT 1"))).rejects.toBeInstanceOf(PoolInTransactionError);
  });

  it("lets the transaction's own queries, fragments and the pool outside it through", async () => {
    const [row] = await sql.begin(async (tx) => tx`SELECT ${sql.json({ a: 1 })}::jsonb AS j, 2 AS n`);
    expect(row).toEqual({ j: { a: 1 }, n: 2 });
    expect((await sql`SELECT 3 AS n`)[0]).toEqual({ n: 3 });
    const later = await sql.begin(async () => new Promise<unknown>((resolve) => outsideTransaction(() => resolve(sql`SELECT 4 AS n`))));
    expect(later).toEqual([{ n: 4 }]);
  });
});
