import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Db } from "../../packages/controller/src/db/connect.js";
import { openTestDatabase } from "../helpers/db.js";

// What the first run of a query text holds on to (postgres.js keeps an Error of that run for
// every text it has seen, db/query-origin.ts): before, the refresh that first wrote a tenant's
// snapshots kept its collected prefixes for the life of the controller.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

let db: Awaited<ReturnType<typeof openTestDatabase>>;
beforeAll(async () => {
  db = await openTestDatabase();
});
afterAll(async () => db?.close());

/** Whether what `use` was given is still alive once `use` has ended and the heap was collected. */
async function heldAfter(use: (data: { prefixes: string[] }) => Promise<unknown>): Promise<boolean> {
  // A finalizer rather than a WeakRef, which keeps its target alive until the task that made it ends.
  let collected = false;
  const registry = new FinalizationRegistry(() => {
    collected = true;
  });
  await (async () => {
    const data = { prefixes: Array.from({ length: 1000 }, (_, i) => `10.${i >> 8}.${i & 255}.0/24`) };
    registry.register(data, "data");
    await use(data);
  })();
  for (let i = 0; i < 10 && !collected; i++) {
    await new Promise((r) => setTimeout(r, 10));
    gc();
  }
  return !collected;
}

// Each query text below runs here for the first time in this process: that first run is the one kept.
const countIn = (tx: Db, data: { prefixes: string[] }) => tx`SELECT cardinality(${data.prefixes}::text[]) AS n /* query-origins: in a transaction */`;

describe("a query text's first run", () => {
  it("keeps nothing of the transaction it ran in once the transaction has ended", async () => {
    let n = 0;
    const held = await heldAfter((data) =>
      db.sql.begin(async (tx) => {
        // The callback holds `data`, as the refresh's holds its collected modules.
        const [row] = await countIn(tx, data);
        n = Number(row!.n) + data.prefixes.length;
      }),
    );
    expect(n).toBe(2000);
    expect(held).toBe(false);
  });

  it("keeps nothing of a savepoint's callback either", async () => {
    const held = await heldAfter((data) =>
      db.sql.begin((tx) => tx.savepoint(async (sp) => sp`SELECT cardinality(${data.prefixes}::text[]) AS n /* query-origins: in a savepoint */`)),
    );
    expect(held).toBe(false);
  });
});
