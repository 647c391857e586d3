import { diffTagged } from "@rlc/shared/prefix";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// A revision is stored as a change against its parent where that is smaller (migration 0025):
// what the API answers about it (its prefixes, diffs, a rollback to it) is what it answered
// when it was made, read back through the chain; a prune re-bases a kept revision whose parent
// it deletes; the database refuses to delete a parent a revision still needs.

let t: TestController;
const modules: string[] = [];
/** Each revision's prefixes as the API answered right after the refresh that made it. */
const made = new Map<number, unknown[]>();

const call = async (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) => {
  const res = await t.call(t.rootKey, { method, url, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.statusCode === 204 ? null : res.json();
};
const prefixesOf = async (id: number) => (await call("GET", `/v1/revisions/${id}/prefixes?limit=500`)).items as { prefix: string; communities: string[] }[];
const refresh = async () => {
  const job = await call("POST", "/v1/modules/refresh?wait=true");
  expect(job.status).toBe("succeeded");
  const id = job.result.revision_id as number;
  made.set(id, await prefixesOf(id));
  return id;
};
const entry = (m: number, cidr: string) => call("POST", `/v1/modules/${modules[m]}/ip-range-entries`, { cidr });
const stored = () =>
  t.controller.deps.sql<{ revision_id: number; parent_id: number | null; chain_depth: number }[]>`
    SELECT revision_id, parent_id, chain_depth FROM revisions ORDER BY revision_id`;

beforeAll(async () => {
  // The default delay (5 s): long enough to see the revision that fills a chain stored as a change first.
  t = await startTestController();
  for (const [i, community] of ["65000:1", "65000:2"].entries()) {
    const cid = (await call("POST", "/v1/communities", { community, title: `c${i}` })).id;
    modules.push((await call("POST", "/v1/modules", { name: `ranges-${i}`, type: "IP_RANGES", community_id: cid })).id);
  }
  // Every other /24 (so none aggregate), and a few IPv6 prefixes.
  for (let k = 0; k < 30; k++) await entry(0, `11.0.${2 * k}.0/24`);
  for (let k = 0; k < 8; k++) await entry(1, `12.0.${2 * k}.0/24`);
  for (let k = 0; k < 4; k++) await entry(1, `2a00:${k + 1}::/32`);
}, 120_000);
afterAll(async () => {
  await t?.close();
});

describe("revisions stored as changes", () => {
  it("small refreshes are stored as changes against their parent, and read back as they were made", async () => {
    const first = await refresh();
    await entry(0, "11.0.101.0/24");
    await refresh();
    // A prefix of the other module too: its communities change.
    await entry(1, "11.0.4.0/24");
    await refresh();
    const entries = (await call("GET", `/v1/modules/${modules[1]}/ip-range-entries?limit=50`)).items as { id: string; cidr: string }[];
    await call("DELETE", `/v1/modules/${modules[1]}/ip-range-entries/${entries.find((e) => e.cidr === "12.0.2.0/24")!.id}`);
    await refresh();
    await entry(1, "2a00:9::/32");
    await entry(0, "11.0.103.0/24");
    await refresh();
    // More revisions than the controller keeps decoded: the first ones are read from the database.
    for (const cidr of ["11.0.105.0/24", "11.0.107.0/24", "11.0.109.0/24"]) {
      await entry(0, cidr);
      await refresh();
    }
    const rows = await stored();
    expect(rows[0]).toEqual({ revision_id: first, parent_id: null, chain_depth: 0 });
    for (const r of rows.slice(1)) expect(r).toMatchObject({ parent_id: r.revision_id - 1, chain_depth: r.revision_id - first });
    for (const [id, items] of made) expect(await prefixesOf(id)).toEqual(items);
  });

  it("a diff answers what a walk over both whole lists answers, between a revision and its parent or any other", async () => {
    const ids = [...made.keys()];
    const tagged = (id: number) =>
      made.get(id)!.map((p) => ({ prefix: (p as { prefix: string }).prefix, communities: (p as { communities: string[] }).communities }));
    for (const [a, b] of [
      [ids[0]!, ids[1]!],
      [ids[2]!, ids[1]!],
      [ids[2]!, ids[3]!],
      [ids[0]!, ids.at(-1)!],
      [ids.at(-1)!, ids[3]!],
    ] as const) {
      const d = diffTagged(tagged(a), tagged(b));
      expect(await call("GET", `/v1/revisions/${a}/diff/${b}?limit=100`)).toEqual({
        from: a,
        to: b,
        added: d.added,
        removed: d.removed,
        changed: d.changed,
        added_count: d.added.length,
        removed_count: d.removed.length,
        changed_count: d.changed.length,
        truncated: false,
      });
    }
    expect(
      (await call("GET", `/v1/revisions/${ids[2]}/diff/${ids[3]}`)).changed_count + (await call("GET", `/v1/revisions/${ids[1]}/diff/${ids[2]}`)).changed_count,
    ).toBe(1);
  });

  it("the refresh that fills the chain stores only its change, rewritten whole after the commit with the change kept as its link; a diff across it reads no whole content", async () => {
    const first = [...made.keys()][0]!;
    // The chain is at most eight changes deep: the change after it is stored one past the bound,
    // then rewritten whole REVISION_WHOLE_DELAY_MS after its commit, its change kept as its link.
    let whole = 0;
    for (const cidr of ["11.0.111.0/24", "11.0.113.0/24"]) {
      await entry(0, cidr);
      whole = await refresh();
    }
    const rows = await stored();
    expect(rows.find((r) => r.revision_id === whole - 1)).toMatchObject({ chain_depth: 8 });
    expect(rows.find((r) => r.revision_id === whole)).toEqual({ revision_id: whole, parent_id: whole - 1, chain_depth: 9 });
    expect(await prefixesOf(whole)).toEqual(made.get(whole));
    const linkOf = async (id: number) =>
      (
        await t.controller.deps.sql<{ parent_id: number | null; chain_depth: number; link_parent_id: number | null; linked: boolean }[]>`
          SELECT parent_id, chain_depth, link_parent_id, link_change IS NOT NULL AS linked FROM revisions WHERE revision_id = ${id}`
      )[0];
    // A refresh within the delay (the prefix just added taken out again): a change one further
    // past the bound, to be rewritten in its turn.
    const added = (await call("GET", `/v1/modules/${modules[0]}/ip-range-entries?limit=100`)).items as { id: string; cidr: string }[];
    await call("DELETE", `/v1/modules/${modules[0]}/ip-range-entries/${added.find((e) => e.cidr === "11.0.113.0/24")!.id}`);
    const next = await refresh();
    const nextAt = Date.now();
    expect(await linkOf(next)).toEqual({ parent_id: whole, chain_depth: 10, link_parent_id: null, linked: false });
    await expect
      .poll(() => linkOf(whole), { timeout: 30_000, interval: 200 })
      .toEqual({ parent_id: null, chain_depth: 0, link_parent_id: whole - 1, linked: true });
    // Its rewrite took the depth of the one after it down with it: one change from a whole content,
    // which its own rewrite, when its time comes, finds within the bound and leaves as it is.
    expect(await linkOf(next)).toEqual({ parent_id: whole, chain_depth: 1, link_parent_id: null, linked: false });
    await new Promise((r) => setTimeout(r, Math.max(0, nextAt + 7000 - Date.now())));
    expect(await linkOf(next)).toEqual({ parent_id: whole, chain_depth: 1, link_parent_id: null, linked: false });
    for (const id of [whole, next]) expect(await prefixesOf(id)).toEqual(made.get(id));
    await entry(1, "2a00:10::/32");
    const after = await refresh();
    const links = await t.controller.deps.sql<
      { revision_id: number; parent_id: number | null; chain_depth: number; link_parent_id: number | null; linked: boolean }[]
    >`
      SELECT revision_id, parent_id, chain_depth, link_parent_id, link_change IS NOT NULL AS linked FROM revisions WHERE revision_id >= ${whole} ORDER BY revision_id`;
    expect(links).toEqual([
      { revision_id: whole, parent_id: null, chain_depth: 0, link_parent_id: whole - 1, linked: true },
      { revision_id: next, parent_id: whole, chain_depth: 1, link_parent_id: null, linked: false },
      { revision_id: after, parent_id: next, chain_depth: 2, link_parent_id: null, linked: false },
    ]);
    // The first revision's content made unreadable: the diff is composed from the changes and the link alone.
    const [saved] = await t.controller.deps.sql<{ content: Buffer }[]>`SELECT content FROM revisions WHERE revision_id = ${first}`;
    const content = saved!.content;
    await t.controller.deps.sql`UPDATE revisions SET content = ${Buffer.from([0])} WHERE revision_id = ${first}`;
    try {
      const tagged = (id: number) =>
        made.get(id)!.map((p) => ({ prefix: (p as { prefix: string }).prefix, communities: (p as { communities: string[] }).communities }));
      const d = diffTagged(tagged(first), tagged(after));
      expect(await call("GET", `/v1/revisions/${first}/diff/${after}?limit=100`)).toMatchObject({ added: d.added, removed: d.removed, changed: d.changed });
    } finally {
      await t.controller.deps.sql`UPDATE revisions SET content = ${content} WHERE revision_id = ${first}`;
    }
  });

  it("a rollback is stored as a change against the current revision and answers the old prefixes", async () => {
    const [first] = made.keys();
    const rolled = await call("POST", `/v1/revisions/${first}/rollback`);
    const row = (await stored()).at(-1)!;
    expect(row).toMatchObject({ revision_id: rolled.revision_id, parent_id: rolled.revision_id - 1 });
    expect(await prefixesOf(rolled.revision_id)).toEqual(made.get(first!));
    made.set(rolled.revision_id, made.get(first!)!);
  });

  it("the database refuses to delete a revision another is stored against; a prune stores the first kept one whole and reads every kept one as before", async () => {
    const ids = [...made.keys()];
    await expect(t.controller.deps.sql`DELETE FROM revisions WHERE revision_id = ${ids[2]!}`).rejects.toThrow(/foreign key/);
    await call("PATCH", "/v1/settings", { revision_retention_minutes: 60 });
    const old = ids.slice(0, 4);
    await t.controller.deps.sql`UPDATE revisions SET created_at = created_at - interval '1 day' WHERE revision_id = ANY(${old}::int[])`;
    const pruned = await call("POST", "/v1/revisions/prune", {});
    expect(pruned).toMatchObject({ deleted_count: 4, deleted_revision_ids: old });
    const rows = await stored();
    expect(rows.map((r) => r.revision_id)).toEqual(ids.slice(4));
    expect(rows[0]).toMatchObject({ parent_id: null, chain_depth: 0 });
    expect(rows[1]).toMatchObject({ parent_id: ids[4] });
    for (const id of ids.slice(4)) expect(await prefixesOf(id)).toEqual(made.get(id));
  });

  it("a prune clears the links to the revisions it deletes, and every kept revision reads as before", async () => {
    const sql = t.controller.deps.sql;
    const [linked] = await sql<{ whole: number }[]>`SELECT revision_id AS whole FROM revisions WHERE link_parent_id IS NOT NULL`;
    const whole = linked!.whole;
    await sql`UPDATE revisions SET created_at = created_at - interval '1 day' WHERE revision_id < ${whole}`;
    const pruned = await call("POST", "/v1/revisions/prune", {});
    expect(pruned.deleted_revision_ids).toContain(whole - 1);
    expect(await sql`SELECT link_parent_id, link_change FROM revisions WHERE revision_id = ${whole}`).toEqual([{ link_parent_id: null, link_change: null }]);
    const kept = (await stored()).map((r) => r.revision_id);
    expect(kept[0]).toBe(whole);
    for (const id of kept) expect(await prefixesOf(id)).toEqual(made.get(id));
  });
});

/**
 * A controller of its own (`env`) with one IP_RANGES module: `post` to its API, and `add` an
 * entry then refresh (which must succeed). Closed when `fn` ends.
 */
async function withOwnController(
  env: Record<string, string>,
  fn: (c: { w: TestController; add: (cidr: string, refresh?: boolean) => Promise<void> }) => Promise<void>,
) {
  const w = await startTestController({ env });
  try {
    const post = async (url: string, payload?: object) => (await w.call(w.rootKey, { method: "POST", url, ...(payload ? { payload } : {}) })).json();
    const id = (await post("/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: null })).id;
    const add = async (cidr: string, refresh = true) => {
      await post(`/v1/modules/${id}/ip-range-entries`, { cidr });
      if (refresh) expect((await post("/v1/modules/refresh?wait=true")).status).toBe("succeeded");
    };
    await fn({ w, add });
  } finally {
    await w.close();
  }
}

describe("REVISION_STORAGE=whole", () => {
  it("stores every revision whole, as before migration 0025", async () => {
    await withOwnController({ REVISION_STORAGE: "whole" }, async ({ w, add }) => {
      for (const cidr of ["11.0.0.0/24", "11.0.2.0/24"]) await add(cidr);
      expect(await w.controller.deps.sql`SELECT revision_id, parent_id FROM revisions ORDER BY revision_id`).toEqual([
        { revision_id: 1, parent_id: null },
        { revision_id: 2, parent_id: null },
      ]);
    });
  });
});

describe("revisions past their chain's bound whose rewrites never came", () => {
  it("are read as stored, and a chain four times the bound starts again whole at once, keeping its change as its link", async () => {
    await withOwnController({ REVISION_WHOLE_DELAY_MS: "3600000" }, async ({ w, add }) => {
      // Enough prefixes that the chain ends at its depth, not at its share of them.
      for (let k = 40; k < 69; k++) await add(`11.0.${2 * k}.0/24`, false);
      // The first revision whole, eight changes, 24 more past the bound (rewrites to come), and one more.
      for (let k = 0; k < 34; k++) await add(`11.0.${2 * k}.0/24`);
      const rows = await w.controller.deps.sql<{ revision_id: number; parent_id: number | null; chain_depth: number; link_parent_id: number | null }[]>`
        SELECT revision_id, parent_id, chain_depth, link_parent_id FROM revisions ORDER BY revision_id`;
      expect(rows).toEqual([
        { revision_id: 1, parent_id: null, chain_depth: 0, link_parent_id: null },
        ...Array.from({ length: 32 }, (_, k) => ({ revision_id: k + 2, parent_id: k + 1, chain_depth: k + 1, link_parent_id: null })),
        { revision_id: 34, parent_id: null, chain_depth: 0, link_parent_id: 33 },
      ]);
      for (const rev of [9, 10, 33, 34]) {
        const items = (await w.call(w.rootKey, { method: "GET", url: `/v1/revisions/${rev}/prefixes?limit=100` })).json().items as { prefix: string }[];
        expect(items.map((p) => p.prefix).sort()).toEqual(
          [...Array.from({ length: rev }, (_, k) => k), ...Array.from({ length: 29 }, (_, k) => 40 + k)].map((k) => `11.0.${2 * k}.0/24`).sort(),
        );
      }
    });
  });
});
