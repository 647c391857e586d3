import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../packages/controller/src/config.js";
import { type Controller, startController } from "../../packages/controller/src/controller.js";
import { listSnapshotGroups, replaceModuleSnapshot } from "../../packages/controller/src/db/snapshots.js";
import { startFeedServer } from "../helpers/feeds.js";

// The ingest's SQL on the embedded database (PGlite over pglite-socket): snapshot rows written
// with unnest and string_to_array, the lookup's version query (xmin), the revision's bytea.
let dir: string;
let c: Controller;
let feeds: Awaited<ReturnType<typeof startFeedServer>>;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-embedded-ingest-"));
  feeds = await startFeedServer();
  c = await startController(loadConfig({ APP_DATA_DIR: dir, LOG_LEVEL: "silent", APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" }), { logger: false });
}, 120_000);
afterAll(async () => {
  await c?.close();
  await feeds?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("ingest on the embedded database", () => {
  it("refreshes a module, stores its snapshot as one row per source, and looks an address up", async () => {
    const headers = { authorization: `Bearer ${c.bootstrap.secret!}` };
    const call = async (method: "GET" | "POST", url: string, payload?: object) => {
      const res = await c.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });
      expect(res.statusCode, res.body).toBeLessThan(300);
      return res.json();
    };
    const community = await call("POST", "/v1/communities", { community: "65000:7", title: "embedded" });
    const mod = await call("POST", "/v1/modules", { name: "feeds", type: "IP_RANGES", community_id: community.id });
    await call("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "80.0.0.0/16" });
    feeds.text("/list.txt", ["80.0.1.0/24", "81.0.0.0/24", "81.0.1.0/24", "2a01:4f8::/32"]);
    await call("POST", `/v1/modules/${mod.id}/cdn-sources`, { url: `${feeds.base}/list.txt`, format: "text" });
    const job = await call("POST", `/v1/modules/${mod.id}/refresh?wait=true`);
    expect(job.result).toMatchObject({ unchanged: false, modules: [{ module_id: mod.id, prefix_count: 5, sources_ok: 1, sources_failed: 0 }] });
    const prefixes = (await call("GET", `/v1/revisions/${job.result.revision_id}/prefixes`)).items.map((p: any) => [p.prefix, p.module_ids]);
    expect(prefixes).toEqual([
      ["80.0.0.0/16", [mod.id]],
      ["81.0.0.0/23", [mod.id]],
      ["2a01:4f8::/32", [mod.id]],
    ]);
    const look = await call("GET", "/v1/lookup?q=80.0.1.9");
    expect(look.revision).toEqual({ revision_id: job.result.revision_id, prefix: "80.0.0.0/16", communities: ["65000:7"] });
    expect(look.matches.map((m: any) => [m.layer, m.source ?? null, m.prefix ?? m.value])).toEqual([
      ["entry", null, "80.0.0.0/16"],
      ["snapshot", "ip_range", "80.0.0.0/16"],
      ["snapshot", "cdn", "80.0.1.0/24"],
    ]);
  });

  it("writes and reads back domain rows with when each address was seen", async () => {
    const [row] = await c.db.sql<{ id: string; tenant_id: string }[]>`SELECT id, tenant_id FROM modules LIMIT 1`;
    const seen = [Date.UTC(2026, 0, 1, 10, 0, 0, 123), Date.UTC(2026, 0, 1, 11, 30)];
    const written = Date.UTC(2026, 0, 1, 12, 0, 0, 456);
    await c.db.sql.begin(async (tx) => {
      await replaceModuleSnapshot(
        tx,
        row!.tenant_id,
        row!.id,
        [
          { source: "domain", origin: "a.example", prefixes: ["1.2.3.4/32", "2606:4700::1/128"], seen_at: seen },
          { source: "cdn", origin: "feed", prefixes: [], seen_at: null },
          { source: "asn", origin: "13335", prefixes: ["1.1.1.0/24"], seen_at: null },
        ],
        new Date(written),
      );
    });
    expect(await listSnapshotGroups(c.db.sql, row!.id)).toEqual([
      { source: "asn", origin: "13335", prefixes: ["1.1.1.0/24"], seen_at: null, refreshed_at: written },
      { source: "cdn", origin: "feed", prefixes: [], seen_at: null, refreshed_at: written },
      { source: "domain", origin: "a.example", prefixes: ["1.2.3.4/32", "2606:4700::1/128"], seen_at: seen, refreshed_at: written },
    ]);
  });
});
