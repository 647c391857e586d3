import postgres from "postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lockTenantRevisions } from "../../packages/controller/src/db/revisions.js";
import { bumpSnapshotGeneration, replaceSnapshots } from "../../packages/controller/src/db/snapshots.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until, untilJobDone } from "../helpers/wait.js";

// A refresh builds its revision from the tenant's snapshots as they are once it holds the
// tenant's revision lock: a refresh of another module that commits meanwhile (another replica's,
// here a transaction of the test's own that holds the lock while the refresh runs) is in the
// revision. Built before the lock, from the snapshots as they were, the revision left that
// change out although its snapshot had committed. PostgreSQL only (two connections at once: the
// embedded database has one).

let t: TestController;
let admin: postgres.Sql;

const post = async (url: string, payload?: object) => {
  const res = await t.call(t.rootKey, { method: "POST", url, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};

beforeAll(async () => {
  t = await startTestController();
  // Two connections: the other transaction holds one while the test looks at the server with the other.
  admin = postgres(t.db.url, { max: 2, onnotice: () => {} });
}, 60_000);
afterAll(async () => {
  await admin?.end();
  await t?.close();
});

describe("a refresh and the tenant's revision lock", () => {
  it("builds from the snapshots another refresh committed while this one waited for the lock", async () => {
    const ids: string[] = [];
    for (const [i, community] of ["65000:1", "65000:2"].entries()) {
      const cid = (await post("/v1/communities", { community, title: `c${i}` })).id;
      ids.push((await post("/v1/modules", { name: `ranges-${i}`, type: "IP_RANGES", community_id: cid })).id);
      await post(`/v1/modules/${ids[i]}/ip-range-entries`, { cidr: `1${2 + i}.0.0.0/24` });
    }
    const first = await post("/v1/modules/refresh?wait=true");
    expect(first.status).toBe("succeeded");
    const [row] = await admin<{ tenant_id: string }[]>`SELECT tenant_id FROM modules WHERE id = ${ids[0]!}`;
    const tenantId = row!.tenant_id;

    await post(`/v1/modules/${ids[1]}/ip-range-entries`, { cidr: "17.0.0.0/24" });
    // "Another replica" holds the lock, with module 0's new snapshot written but not committed.
    let commit!: () => void;
    const committing = new Promise<void>((resolve) => {
      commit = resolve;
    });
    const other = admin.begin(async (tx) => {
      await lockTenantRevisions(tx, tenantId);
      await replaceSnapshots(
        tx,
        tenantId,
        [{ module_id: ids[0]!, groups: [{ source: "ip_range", origin: "other", prefixes: ["12.0.0.0/24", "16.0.0.0/24"], seen_at: null }] }],
        new Date(),
      );
      await bumpSnapshotGeneration(tx, tenantId);
      await committing;
    });

    const job = await post(`/v1/modules/${ids[1]}/refresh`);
    // The refresh waits for the lock (before its build, or, built already, before its commit).
    await until("the refresh waiting for the tenant's revision lock", async () => {
      const waiting = await admin`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = 'advisory'`;
      return waiting.length > 0;
    });
    commit();
    await other;

    const done = await untilJobDone(t, job.job_id);
    expect(done.status).toBe("succeeded");
    const items = (await t.call(t.rootKey, { method: "GET", url: `/v1/revisions/${done.result.revision_id}/prefixes?limit=100` })).json().items;
    expect(items.map((p: { prefix: string }) => p.prefix).sort()).toEqual(["12.0.0.0/24", "13.0.0.0/24", "16.0.0.0/24", "17.0.0.0/24"]);
  });
});
