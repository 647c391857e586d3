import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../packages/controller/src/db/connect.js";
import { listSnapshotGroups, replaceSnapshots, type SnapshotGroup } from "../../packages/controller/src/db/snapshots.js";
import { openTestDatabase } from "../helpers/db.js";

// The snapshots of a refresh's modules written at once (replaceSnapshots): their rows sent in
// several statements, some under way together, on PostgreSQL and on the embedded database
// (TEST_DB=embedded). Each module reads back what was written, the rows it had before gone;
// a statement that fails fails the write, and the transaction leaves the snapshots as they were.
let db: Database & { close(): Promise<void> };
const tenantId = randomUUID();
const at = new Date("2026-03-01T12:00:00Z");

beforeAll(async () => {
  db = await openTestDatabase();
  await db.sql`INSERT INTO tenants (id, name, created_at) VALUES (${tenantId}, 'snapshot-write', ${at})`;
}, 60_000);
afterAll(async () => {
  await db?.close();
});

async function newModule(): Promise<string> {
  const id = randomUUID();
  await db.sql`INSERT INTO modules (id, tenant_id, name, type, doh_resolver_policy, created_at, updated_at)
               VALUES (${id}, ${tenantId}, ${`m-${id}`}, 'IP_RANGES', '{}', ${at}, ${at})`;
  return id;
}

/** `count` distinct /24s from `seed`, as a feed would give them. */
const slash24s = (seed: number, count: number) =>
  Array.from({ length: count }, (_, i) => `${10 + ((seed + i) >> 16)}.${((seed + i) >> 8) & 255}.${(seed + i) & 255}.0/24`);

describe("replaceSnapshots", () => {
  it("writes several modules' groups over many statements and reads each module's back, replacing what it had", async () => {
    const ids = [await newModule(), await newModule(), await newModule()];
    await db.sql.begin((tx) =>
      replaceSnapshots(tx, tenantId, [{ module_id: ids[0]!, groups: [{ source: "cdn", origin: "old", prefixes: ["192.0.2.0/24"], seen_at: null }] }], at),
    );
    // ~3.4 MB of prefixes: more statements than are under way at once.
    const groups: SnapshotGroup[][] = [
      [
        { source: "cdn", origin: "feed-a", prefixes: slash24s(0, 120_000), seen_at: null },
        { source: "cdn", origin: "feed-b", prefixes: [...slash24s(500_000, 30_000), "2001:db8::/48"], seen_at: null },
      ],
      Array.from({ length: 60 }, (_, i) => ({
        source: "asn" as const,
        origin: String(64500 + i),
        prefixes: slash24s(200_000 + i * 1000, 1000),
        seen_at: null,
      })),
      [
        { source: "ip_range", origin: randomUUID(), prefixes: ["198.51.100.0/24"], seen_at: null },
        { source: "cdn", origin: "empty", prefixes: [], seen_at: null },
        { source: "cdn", origin: "big", prefixes: slash24s(900_000, 80_000), seen_at: null, refreshed_at: at.getTime() - 60_000 },
      ],
    ];
    const written = new Date(at.getTime() + 1000);
    await db.sql.begin((tx) =>
      replaceSnapshots(
        tx,
        tenantId,
        ids.map((id, i) => ({ module_id: id, groups: groups[i]! })),
        written,
      ),
    );
    for (const [i, id] of ids.entries()) {
      const expected = groups[i]!.map((g) => ({ ...g, refreshed_at: g.refreshed_at ?? written.getTime() }));
      const byKey = (g: SnapshotGroup) => `${g.source}\u0000${g.origin}`;
      expected.sort((x, y) => (byKey(x) < byKey(y) ? -1 : byKey(x) > byKey(y) ? 1 : 0));
      expect(await listSnapshotGroups(db.sql, id)).toEqual(expected);
    }
  }, 60_000);

  it("fails when a statement fails, after the others sent with it, and the transaction keeps the snapshots as they were", async () => {
    const ids = [await newModule(), await newModule()];
    const before: SnapshotGroup = { source: "cdn", origin: "kept", prefixes: ["203.0.113.0/24"], seen_at: null };
    await db.sql.begin((tx) =>
      replaceSnapshots(
        tx,
        tenantId,
        ids.map((id) => ({ module_id: id, groups: [before] })),
        at,
      ),
    );
    // The second statement breaks the source's form (CHECK); more follow it.
    const groups: SnapshotGroup[] = [
      { source: "cdn", origin: "a", prefixes: slash24s(0, 70_000), seen_at: null },
      { source: "Not A Source" as SnapshotGroup["source"], origin: "b", prefixes: slash24s(100_000, 70_000), seen_at: null },
      ...Array.from({ length: 5 }, (_, i) => ({ source: "cdn" as const, origin: `c${i}`, prefixes: slash24s(200_000 + i * 70_000, 70_000), seen_at: null })),
    ];
    await expect(
      db.sql.begin((tx) =>
        replaceSnapshots(
          tx,
          tenantId,
          [
            { module_id: ids[0]!, groups },
            { module_id: ids[1]!, groups: [] },
          ],
          at,
        ),
      ),
    ).rejects.toThrow(/snapshots_source_form/);
    for (const id of ids) expect(await listSnapshotGroups(db.sql, id)).toEqual([{ ...before, refreshed_at: at.getTime() }]);
  }, 60_000);

  it("takes a transaction, not the pool: its DELETE is not waited for, and on a pool an INSERT could run before it on another connection", () => {
    // The typecheck of the tests (npm run lint) fails when the pool is accepted.
    // @ts-expect-error a pool is not a transaction
    const onPool = () => replaceSnapshots(db.sql, randomUUID(), [], new Date());
    expect(onPool).toBeTypeOf("function");
  });

  it("stores a module's prefixes lz4-compressed where the server has lz4 (PostgreSQL), uncompressed on the embedded database", async () => {
    const id = await newModule();
    const prefixes = slash24s(0, 60_000);
    await db.sql.begin((tx) => replaceSnapshots(tx, tenantId, [{ module_id: id, groups: [{ source: "cdn", origin: "feed", prefixes, seen_at: null }] }], at));
    const [row] = await db.sql<{ stored: number; text: number; compression: string | null }[]>`
      SELECT pg_column_size(prefixes)::int AS stored, length(array_to_string(prefixes, ' '))::int AS text, pg_column_compression(prefixes) AS compression
      FROM snapshots WHERE module_id = ${id}`;
    if (db.kind === "postgres") {
      // ~0.3 MB for ~0.85 MB of text (uncompressed, as stored before: ~1.15 MB), in the table and in the WAL.
      expect(row).toMatchObject({ compression: "lz4" });
      expect(row!.stored).toBeLessThan(row!.text / 2);
    } else {
      expect(row!.compression).toBeNull();
      expect(row!.stored).toBeGreaterThan(row!.text);
    }
    expect((await listSnapshotGroups(db.sql, id))[0]!.prefixes).toEqual(prefixes);
  });
});
