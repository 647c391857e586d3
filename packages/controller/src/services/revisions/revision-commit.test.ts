import { randomUUID } from "node:crypto";
import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "../../../../../test/helpers/db.js";
import { createMemoryBus } from "../../bus/memory-bus.js";
import type { Db } from "../../db/connect.js";
import { findRevision, findRevisionContent } from "../../db/revisions.js";
import { buildRevision } from "./revision-build.js";
import { createRevisionCommitter, type NewRevision } from "./revision-commit.js";
import { DIGEST_SCHEME } from "./revision-digest.js";
import { createRevisionStore } from "./revision-store.js";

// The one place a revision is committed: ingest and rollback both go through it, so both get
// the guard, the next id, the sections an apply needs and the event once committed.

let database: TestDatabase;
let sql: postgres.Sql;
const tenantId = randomUUID();
const now = new Date("2026-03-01T12:00:00Z");
const bus = createMemoryBus();
const events: unknown[] = [];
const prepared: number[] = [];
let failSections = false;
const store = createRevisionStore();
const committer = createRevisionCommitter({
  revisions: store,
  bus,
  sections: {
    async prepareSections(tx: Db, tenant: string, revisionId: number) {
      expect(tenant).toBe(tenantId);
      // Inside the committing transaction: the row it prepares for is there.
      expect(await findRevision(tx, tenant, revisionId)).toBeDefined();
      if (failSections) throw new Error("no signing key");
      prepared.push(revisionId);
    },
  },
});

const fields = (built: ReturnType<typeof buildRevision>, reason: NewRevision["reason"] = "ingest"): NewRevision & { created_at: Date } => ({
  created_at: now,
  created_by: "key:test",
  reason,
  rolled_back_from: null,
  digest: built.digest,
  digest_scheme: DIGEST_SCHEME,
  prefix_count_v4: built.content.v4.length,
  prefix_count_v6: built.content.v6.length,
  input_prefix_count: built.input_prefix_count,
  dropped_prefix_count: built.dropped_prefix_count,
  modules: built.modules,
});
const build = (prefixes: string[]) => buildRevision([{ module_id: "m", name: "m", community: "65000:1", prefixes }]);

beforeAll(async () => {
  database = await createTestDatabase();
  sql = postgres(database.url, { max: 2, onnotice: () => {} });
  await sql`INSERT INTO tenants (id, name, created_at) VALUES (${tenantId}, 'commit', ${now})`;
  bus.subscribe(">", (message) => events.push(message));
});
afterAll(async () => {
  await sql?.end({ timeout: 1 });
  await database?.drop();
});

describe("revision committer", () => {
  it("commits an ingest revision with its sections, announcing it only once the transaction has committed", async () => {
    const built = build(["11.0.0.0/24", "11.0.2.0/24"]);
    const after: (() => void)[] = [];
    const committed = await sql.begin(async (tx) => {
      const current = await committer.lockCurrent(tx as never, tenantId);
      return committer.commit(tx as never, tenantId, current, { ...fields(built), content: built.content }, (fn) => after.push(fn));
    });
    expect(committed.row).toMatchObject({ tenant_id: tenantId, revision_id: 1, reason: "ingest" });
    expect(committed.sections_error).toBeNull();
    expect(prepared).toEqual([1]);
    expect(events).toEqual([]);
    for (const fn of after) fn();
    await new Promise((r) => setTimeout(r, 10));
    expect(events).toEqual([expect.objectContaining({ tenant_id: tenantId, revision_id: 1 })]);
  });

  it("refuses, unless forced, a revision that withdraws more than the limit of the current one", async () => {
    const next = build(["11.0.0.0/24"]);
    await sql.begin(async (tx) => {
      const current = await committer.lockCurrent(tx as never, tenantId);
      await expect(committer.guard(tx as never, tenantId, current, next.content, 40, false)).rejects.toMatchObject({ code: "revision_guard_tripped" });
      await committer.guard(tx as never, tenantId, current, next.content, 40, true);
      await committer.guard(tx as never, tenantId, current, next.content, 50, false);
    });
  });

  it("a rollback's copy of an old revision gets the next id and its sections too; a sections failure is reported and the revision stands", async () => {
    const old = (await findRevision(sql as never, tenantId, 1))!;
    const data = (await findRevisionContent(sql as never, tenantId, 1))!;
    failSections = true;
    const committed = await sql.begin(async (tx) => {
      const current = await committer.lockCurrent(tx as never, tenantId);
      const { tenant_id: _t, revision_id: _r, ...rest } = old;
      return committer.commit(tx as never, tenantId, current, { ...rest, created_at: now, reason: "rollback", rolled_back_from: 1, content: data }, () => {});
    });
    failSections = false;
    expect(committed.row).toMatchObject({ revision_id: 2, reason: "rollback", rolled_back_from: 1, digest: old.digest });
    expect(committed.sections_error).toBe("no signing key");
    expect((await findRevisionContent(sql as never, tenantId, 2))!.equals(data)).toBe(true);
  });

  it("the sections of a revision id taken again after a rolled-back commit are built from the content committed, not the rolled-back one", async () => {
    const tenant = randomUUID();
    await sql`INSERT INTO tenants (id, name, created_at) VALUES (${tenant}, 'retry', ${now})`;
    const seenStore = createRevisionStore();
    const seen: string[][] = [];
    const reading = createRevisionCommitter({
      revisions: seenStore,
      bus,
      sections: {
        // As deploy's sections do: the new revision's content read inside the transaction.
        async prepareSections(tx: Db, t: string, revisionId: number) {
          seen.push((await seenStore.content(tx, t, revisionId))!.v4.texts());
        },
      },
    });
    const commit = (built: ReturnType<typeof build>) =>
      sql.begin(async (tx) => {
        const current = await reading.lockCurrent(tx as never, tenant);
        return reading.commit(tx as never, tenant, current, { ...fields(built), content: built.content }, () => {});
      });
    await expect(
      sql.begin(async (tx) => {
        await reading.commit(tx as never, tenant, undefined, { ...fields(build(["11.0.0.0/24"])), content: build(["11.0.0.0/24"]).content }, () => {});
        throw new Error("the job was cancelled");
      }),
    ).rejects.toThrow("cancelled");
    const committed = await commit(build(["12.0.0.0/24"]));
    expect(committed.row.revision_id).toBe(1);
    expect(seen).toEqual([["11.0.0.0/24"], ["12.0.0.0/24"]]);
    expect((await seenStore.content(sql as never, tenant, 1))!.v4.texts()).toEqual(["12.0.0.0/24"]);
  });
});
