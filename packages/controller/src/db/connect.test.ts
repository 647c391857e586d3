import { executionAsyncResource } from "node:async_hooks";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { guardPool, outsideTransaction, PoolInTransactionError } from "./connect.js";

const url = process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
let sql: postgres.Sql;
beforeAll(() => {
  sql = guardPool(postgres(url, { max: 2, onnotice: () => {} }));
});
afterAll(async () => sql?.end({ timeout: 1 }));

/** A transaction under way until `release()`, which then queries the pool (refused: PoolInTransactionError). */
async function heldTransaction(): Promise<{ transaction: Promise<unknown>; release: () => void }> {
  let release!: () => void;
  const held = new Promise<void>((r) => {
    release = r;
  });
  let started!: () => void;
  const open = new Promise<void>((r) => {
    started = r;
  });
  const transaction = sql.begin(async () => {
    started();
    await held;
    return sql`SELECT 1`;
  });
  await open;
  return { transaction, release };
}

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

  it("keeps watching a transaction while another one ends beside it, and an array of queries still answers their rows", async () => {
    const { transaction: first, release } = await heldTransaction();
    // A second transaction starts and ends while the first is still under way.
    expect(await sql.begin((tx) => [tx`SELECT 5 AS n`, tx`SELECT 6 AS n`])).toEqual([[{ n: 5 }], [{ n: 6 }]]);
    release();
    await expect(first).rejects.toBeInstanceOf(PoolInTransactionError);
    // A callback that throws before its first await ends its transaction too; the next one is watched.
    await expect(
      sql.begin(() => {
        throw new Error("at once");
      }),
    ).rejects.toThrow("at once");
    await expect(sql.begin(async () => sql`SELECT 1`)).rejects.toBeInstanceOf(PoolInTransactionError);
    expect((await sql`SELECT 7 AS n`)[0]).toEqual({ n: 7 });
  });

  it("stops tracking async work once no transaction is open, and starts again with the next one", async () => {
    // The scope's own mark on the async resource a transaction's callback runs in (Node 20 and 22,
    // whose AsyncLocalStorage is built on async hooks).
    const mark = await sql.begin(async () => {
      await null;
      const resource = executionAsyncResource() as Record<symbol, unknown>;
      return Object.getOwnPropertySymbols(resource).find((s) => (resource[s] as { open?: unknown } | undefined)?.open === true);
    });
    if (mark === undefined) {
      // Node 24 carries the scope in AsyncContextFrame: no mark, no hook, nothing to stop.
      expect(Number(process.versions.node.split(".")[0])).toBeGreaterThanOrEqual(24);
      return;
    }
    const tracked = () => new Promise<boolean>((resolve) => setImmediate(() => resolve(Object.hasOwn(executionAsyncResource(), mark as symbol))));
    // No transaction open: resources are made without the scope's hook (it ran on every one).
    expect(await tracked()).toBe(false);
    // With a transaction open, every resource is tracked again (the scope must follow its callback's work).
    const { transaction: tx, release } = await heldTransaction();
    expect(await tracked()).toBe(true);
    release();
    await expect(tx).rejects.toBeInstanceOf(PoolInTransactionError);
    expect(await tracked()).toBe(false);
    expect((await sql`SELECT 8 AS n`)[0]).toEqual({ n: 8 });
  });

  it("lets a timer left by an ended transaction query the pool while no transaction is open", async () => {
    const left = await new Promise<unknown>((resolve, reject) => {
      sql.begin(async () => {
        setTimeout(() => {
          try {
            resolve(sql`SELECT 9 AS n`);
          } catch (e) {
            reject(e);
          }
        }, 50);
      });
    });
    expect(left).toEqual([{ n: 9 }]);
  });

  it("lets a timer left by an ended transaction query the pool while another transaction is open", async () => {
    let openGate!: () => void;
    const gate = new Promise<void>((r) => {
      openGate = r;
    });
    let left!: Promise<unknown>;
    await sql.begin(async () => {
      left = new Promise<unknown>((resolve, reject) => {
        setTimeout(async () => {
          await gate;
          try {
            resolve(await sql`SELECT 10 AS n`);
          } catch (e) {
            reject(e);
          }
        }, 0);
      });
    });
    // That transaction has ended; another one is under way when its timer queries the pool.
    const { transaction, release } = await heldTransaction();
    openGate();
    expect(await left).toEqual([{ n: 10 }]);
    release();
    await expect(transaction).rejects.toBeInstanceOf(PoolInTransactionError);
  });
});
