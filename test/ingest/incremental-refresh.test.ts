import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listSnapshotPrefixes } from "../../packages/controller/src/db/snapshots.js";
import { buildRevision } from "../../packages/controller/src/services/revisions/revision-build.js";
import { encodeContent } from "../../packages/controller/src/services/revisions/revision-encoding.js";
import { createRevisionStore } from "../../packages/controller/src/services/revisions/revision-store.js";
import { startTestController, type TestController } from "../helpers/controller.js";

// A refresh of one module rebuilds only what it changed, from the tenant's last build; what it
// stores is the revision a full build of every module's snapshot gives, byte for byte.

let t: TestController;
const ids: string[] = [];

const post = async (c: TestController, url: string, payload?: object) => {
  const res = await c.call(c.rootKey, { method: "POST", url, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
const refresh = async (c: TestController, moduleId?: string) => {
  const job = await post(c, moduleId ? `/v1/modules/${moduleId}/refresh?wait=true` : "/v1/modules/refresh?wait=true");
  expect(job.status).toBe("succeeded");
  return job.result as { revision_id: number; build: "incremental" | "full" };
};

/** The revision a full build of the stored snapshots gives, against the stored one. */
async function expectFullBuildOf(c: TestController, revisionId: number) {
  const sql = c.controller.deps.sql;
  const [tenant] = await sql<{ id: string }[]>`SELECT tenant_id AS id FROM modules LIMIT 1`;
  const modules = await sql<{ id: string; name: string; community: string | null }[]>`
    SELECT m.id, m.name, c.community FROM modules m LEFT JOIN communities c ON c.id = m.community_id WHERE m.enabled ORDER BY m.created_at`;
  const stored = await listSnapshotPrefixes(
    sql,
    modules.map((m) => m.id),
  );
  const full = buildRevision(modules.map((m) => ({ module_id: m.id, name: m.name, community: m.community, prefixes: stored.get(m.id) ?? [] })));
  // Read as stored (whole, or a change against its parent), by a store that has none cached.
  const content = await createRevisionStore().content(sql, tenant!.id, revisionId);
  expect(encodeContent(content!).equals(encodeContent(full.content))).toBe(true);
  const row = (await c.call(c.rootKey, { method: "GET", url: `/v1/revisions/${revisionId}` })).json();
  expect(row).toMatchObject({ digest: full.digest, input_prefix_count: full.input_prefix_count, dropped_prefix_count: full.dropped_prefix_count });
}

beforeAll(async () => {
  t = await startTestController();
  for (const [i, community] of ["65000:1", "65000:2", "65000:3"].entries()) {
    const cid = (await post(t, "/v1/communities", { community, title: `c${i}` })).id;
    ids.push((await post(t, "/v1/modules", { name: `ranges-${i}`, type: "IP_RANGES", community_id: cid })).id);
  }
  // Overlapping and adjacent ranges across modules, in a few /16 blocks and one wider prefix.
  const cidrs = [
    ["11.0.0.0/24", "11.0.1.0/24", "12.0.0.0/15", "2a00:1::/48"],
    ["11.0.1.0/25", "11.0.2.0/23", "12.1.4.0/22", "13.5.0.0/16"],
    ["11.0.0.0/22", "13.5.128.0/17", "2a00:1:0:1::/64", "14.0.0.0/24"],
  ];
  for (const [i, list] of cidrs.entries()) for (const cidr of list) await post(t, `/v1/modules/${ids[i]}/ip-range-entries`, { cidr });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe("incremental refresh", () => {
  it("a refresh of one module after a full one rebuilds from the last build, and stores what a full build gives", async () => {
    expect((await refresh(t)).build).toBe("full");
    await post(t, `/v1/modules/${ids[0]}/ip-range-entries`, { cidr: "11.0.3.0/24" });
    await post(t, `/v1/modules/${ids[0]}/ip-range-entries`, { cidr: "14.0.1.0/24" });
    const r = await refresh(t, ids[0]);
    expect(r.build).toBe("incremental");
    await expectFullBuildOf(t, r.revision_id);
    const prefixes = (await t.call(t.rootKey, { method: "GET", url: `/v1/revisions/${r.revision_id}/prefixes?limit=100` })).json().items;
    expect(prefixes.map((p: { prefix: string }) => p.prefix)).toContain("14.0.1.0/24");
  });

  it("removing a module's entry is rebuilt the same way, and a diff against the revision before says what changed", async () => {
    const before = (await refresh(t, ids[1])).revision_id;
    const entries = (await t.call(t.rootKey, { method: "GET", url: `/v1/modules/${ids[1]}/ip-range-entries?limit=50` })).json().items;
    const gone = entries.find((e: { cidr: string }) => e.cidr === "13.5.0.0/16");
    expect((await t.call(t.rootKey, { method: "DELETE", url: `/v1/modules/${ids[1]}/ip-range-entries/${gone.id}` })).statusCode).toBe(204);
    const r = await refresh(t, ids[1]);
    expect(r.build).toBe("incremental");
    await expectFullBuildOf(t, r.revision_id);
    const diff = (await t.call(t.rootKey, { method: "GET", url: `/v1/revisions/${before}/diff/${r.revision_id}` })).json();
    expect(diff.removed.map((p: { prefix: string }) => p.prefix)).toContain("13.5.0.0/16");
  });

  it("snapshots written by another process since the last build make the next refresh a full one", async () => {
    await t.controller.deps.sql`UPDATE tenant_generations SET snapshot_generation = snapshot_generation + 1`;
    await post(t, `/v1/modules/${ids[2]}/ip-range-entries`, { cidr: "15.0.0.0/24" });
    const r = await refresh(t, ids[2]);
    expect(r.build).toBe("full");
    await expectFullBuildOf(t, r.revision_id);
  });

  it("REFRESH_MODE=full builds from every module's snapshot each time", async () => {
    const full = await startTestController({ env: { REFRESH_MODE: "full" } });
    try {
      const cid = (await post(full, "/v1/communities", { community: "65000:9", title: "c" })).id;
      const m = (await post(full, "/v1/modules", { name: "r", type: "IP_RANGES", community_id: cid })).id;
      await post(full, `/v1/modules/${m}/ip-range-entries`, { cidr: "11.0.0.0/24" });
      expect((await refresh(full)).build).toBe("full");
      await post(full, `/v1/modules/${m}/ip-range-entries`, { cidr: "11.0.1.0/24" });
      const r = await refresh(full, m);
      expect(r.build).toBe("full");
      await expectFullBuildOf(full, r.revision_id);
    } finally {
      await full.close();
    }
  });
});
