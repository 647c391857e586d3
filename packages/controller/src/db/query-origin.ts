import type postgres from "postgres";

/*
 * postgres.js keeps, for each query text (tagged template) it has run, the Error made when that
 * text first ran, to name a failed query's origin later. An Error holds the functions of its
 * stack frames until its stack is read, and a function holds its closure: the transaction's
 * callback and whatever that held. The controller's first refresh ran its snapshot and revision
 * statements for the first time, so their Errors kept that refresh's collected prefixes (1.4M
 * strings in a 1.2M-prefix tenant, ~90 MB of heap) for the life of the process, and every full
 * garbage collection marked them again (a pause of 0.1–0.3 s, often in a later refresh). Reading
 * the stack once turns the frames into text and lets them go; the text is what postgres.js
 * reads of it.
 */

/** The key postgres.js keeps a query's origin Error under (found on the first query seen). */
let originKey: symbol | undefined;
const released = new WeakSet<Error>();

/** Lets go of what the origin Error of `query` (a postgres.js query; anything else is ignored) holds. */
export function releaseQueryOrigin(query: unknown): void {
  if (typeof query !== "object" || query === null) return;
  originKey ??= Object.getOwnPropertySymbols(query).find((s) => s.description === "OriginError");
  if (originKey === undefined) return;
  const origin = (query as Record<symbol, unknown>)[originKey];
  if (!(origin instanceof Error) || released.has(origin)) return;
  released.add(origin);
  void origin.stack;
}

/**
 * postgres.js runs a few statements of its own for a transaction (`savepoint`, `rollback to`,
 * `rollback`, `commit`), and the first run of each keeps, the same way, the transaction that ran
 * it: its callback. These cannot be reached to be released, so a connection runs each of them
 * once when it opens, in transactions that hold nothing.
 */
export async function runTransactionTexts(sql: postgres.Sql): Promise<void> {
  const nothing = new Error("a transaction rolled back on purpose");
  await sql.begin(async (tx) => {
    await tx
      .savepoint(async () => {
        throw nothing;
      })
      .catch((err: unknown) => {
        if (err !== nothing) throw err;
      });
  });
  await sql
    .begin(async () => {
      throw nothing;
    })
    .catch((err: unknown) => {
      if (err !== nothing) throw err;
    });
}
