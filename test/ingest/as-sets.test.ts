import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { startFeedServer } from "../helpers/feeds.js";
import { startIrrdServer } from "../helpers/irrd-server.js";

// AS-SET entries end to end: an IRRd stand-in on a real TCP port and RIPEstat's API on a real
// HTTP port, the controller between them.
let t: TestController;
let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let irrd: Awaited<ReturnType<typeof startIrrdServer>>;
let key: string;

const call = (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) =>
  t.call(key, { method, url, ...(payload === undefined ? {} : { payload }) });
const post = async (url: string, payload: object) => {
  const res = await call("POST", url, payload);
  if (res.statusCode >= 400) throw new Error(`${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
const refresh = async (moduleId: string) => {
  const res = await call("POST", `/v1/modules/${moduleId}/refresh?wait=true`, { force: true });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
const revisionPrefixes = async (revisionId: number) =>
  (await call("GET", `/v1/revisions/${revisionId}/prefixes?limit=500`)).json().items.map((p: { prefix: string }) => p.prefix);

beforeAll(async () => {
  feeds = await startFeedServer();
  irrd = await startIrrdServer({
    sets: {
      RADB: {
        "AS-TOP": ["AS3333", "AS-MID", "AS-LOOP"],
        "AS-MID": ["AS1299", "AS-MISSING"],
        "AS-LOOP": ["AS2914", "AS-TOP"],
        "AS-BIG": ["AS1", "AS2", "AS3", "AS4"],
      },
      RIPE: { "AS-TOP": ["AS13335"] },
    },
  });
  feeds.ripestat(3333, ["193.0.0.0/21"]);
  feeds.ripestat(1299, ["62.115.0.0/16"]);
  feeds.ripestat(2914, ["129.250.0.0/16"]);
  feeds.ripestat(13335, ["1.1.1.0/24"]);
  for (const asn of [1, 2, 3, 4]) feeds.ripestat(asn, [`${asn}.0.0.0/8`]);
  t = await startTestController({
    env: {
      APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
      ASN_SOURCE: "ripestat",
      ASN_SOURCE_URL: feeds.base,
      IRR_SOURCE: irrd.url,
      IRR_SOURCES: "RADB",
      IRR_MAX_MEMBERS: "3",
      IRR_TIME_LIMIT_SECONDS: "1",
    },
  });
  key = t.rootKey;
});
afterAll(async () => {
  await t?.close();
  await feeds?.close();
  await irrd?.close();
});

describe("AS-SET entries", () => {
  let moduleId: string;

  it("takes an AS-SET, hierarchical or pinned to a source, and refuses a bad name, both fields or neither with the field named", async () => {
    const community = await post("/v1/communities", { community: "65000:26", title: "sets" });
    moduleId = (await post("/v1/modules", { name: "customers", type: "AS_PREFIXES", community_id: community.id })).id;
    const top = await post(`/v1/modules/${moduleId}/as-entries`, { as_set: "as-top" });
    expect(top).toMatchObject({ asn: null, as_set: "AS-TOP" });
    expect(await post(`/v1/modules/${moduleId}/as-entries`, { as_set: "ripe::as-top", comment: "RIPE's" })).toMatchObject({
      asn: null,
      as_set: "RIPE::AS-TOP",
    });
    expect(await post(`/v1/modules/${moduleId}/as-entries`, { asn: "AS3333" })).toMatchObject({ asn: 3333, as_set: null });
    const hierarchical = await post(`/v1/modules/${moduleId}/as-entries`, { as_set: "AS3333:AS-CUSTOMERS" });
    expect(hierarchical.as_set).toBe("AS3333:AS-CUSTOMERS");
    expect((await call("DELETE", `/v1/modules/${moduleId}/as-entries/${hierarchical.id}`)).statusCode).toBe(204);

    for (const [body, path] of [
      [{ as_set: "not a set" }, "body.as_set"],
      [{ as_set: "AS3333" }, "body.as_set"],
      [{ as_set: "AS-TOP", asn: 3333 }, "body.as_set"],
      [{ comment: "nothing" }, "body.asn"],
    ] as const) {
      const res = await call("POST", `/v1/modules/${moduleId}/as-entries`, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    const dup = await call("POST", `/v1/modules/${moduleId}/as-entries`, { as_set: "AS-Top" });
    expect(dup.statusCode).toBe(409);
  });

  it("expands each set through IRR on one connection, keeps via on the snapshot and lists member counts in the job", async () => {
    const connectionsBefore = irrd.state.queries.length;
    const job = await refresh(moduleId);
    expect(irrd.state.queries.length - connectionsBefore).toBe(1);
    expect(job.result.modules[0].as_sets).toEqual([
      { as_set: "AS-TOP", ok: true, member_count: 3 },
      { as_set: "RIPE::AS-TOP", ok: true, member_count: 1 },
    ]);
    expect(job.result.warnings).toEqual([]);
    expect(await revisionPrefixes(job.result.revision_id)).toEqual(["1.1.1.0/24", "62.115.0.0/16", "129.250.0.0/16", "193.0.0.0/21"]);
    const rows = await t.controller.db.sql<{ origin: string; via: string }[]>`
      SELECT origin, via FROM snapshots WHERE module_id = ${moduleId} AND source = 'asn' ORDER BY via, origin::bigint`;
    expect(rows.map((r) => [r.origin, r.via])).toEqual([
      ["3333", ""],
      ["1299", "AS-TOP"],
      ["2914", "AS-TOP"],
      ["3333", "AS-TOP"],
      ["13335", "RIPE::AS-TOP"],
    ]);
    const lookup = (await call("GET", "/v1/lookup?q=62.115.1.1")).json();
    expect(lookup.matches).toContainEqual(
      expect.objectContaining({ layer: "snapshot", source: "asn", origin: "1299", via: "AS-TOP", prefix: "62.115.0.0/16" }),
    );
    const direct = (await call("GET", "/v1/lookup?q=193.0.0.1")).json().matches.filter((m: { layer: string }) => m.layer === "snapshot");
    expect(direct.map((m: { via?: string }) => m.via ?? "")).toEqual(expect.arrayContaining(["", "AS-TOP"]));
  });

  it("keeps a set's last good members when it vanishes, grows over IRR_MAX_MEMBERS or the server stalls, and says so", async () => {
    const top = irrd.state.sets.RADB!["AS-TOP"]!;
    delete irrd.state.sets.RADB!["AS-TOP"];
    let job = await refresh(moduleId);
    expect(job.result.warnings).toContainEqual(
      expect.objectContaining({ source: "irr:AS-TOP", message: expect.stringMatching(/not found.*kept the 3 members/) }),
    );
    expect(job.result.modules[0].as_sets[0]).toMatchObject({ as_set: "AS-TOP", ok: false, member_count: 3 });
    expect(await revisionPrefixes(job.result.revision_id)).toContain("62.115.0.0/16");

    irrd.state.sets.RADB!["AS-TOP"] = [...top, "AS-BIG"];
    job = await refresh(moduleId);
    expect(job.result.warnings).toContainEqual(expect.objectContaining({ source: "irr:AS-TOP", message: expect.stringMatching(/more than 3 member ASNs/) }));
    expect(await revisionPrefixes(job.result.revision_id)).not.toContain("4.0.0.0/8");
    expect(await revisionPrefixes(job.result.revision_id)).toContain("129.250.0.0/16");

    irrd.state.sets.RADB!["AS-TOP"] = top;
    irrd.state.hang = true;
    try {
      job = await refresh(moduleId);
    } finally {
      irrd.state.hang = false;
    }
    expect(job.result.warnings.map((w: { source: string }) => w.source).sort()).toEqual(["irr:AS-TOP", "irr:RIPE::AS-TOP"]);
    expect(await revisionPrefixes(job.result.revision_id)).toEqual(["1.1.1.0/24", "62.115.0.0/16", "129.250.0.0/16", "193.0.0.0/21"]);
  });

  it("shows AS-SET entries in the catalog and the CSV export, and imports them from CSV", async () => {
    const catalog = (await call("GET", "/v1/router-lists/catalog")).json();
    const mod = catalog.modules.find((m: { id: string }) => m.id === moduleId);
    expect(mod.entries.asns.map((e: { asn: number | null; as_set: string | null }) => e.asn ?? e.as_set)).toEqual([3333, "AS-TOP", "RIPE::AS-TOP"]);

    const csv = await call("GET", `/v1/modules/${moduleId}/entries.csv`);
    expect(csv.statusCode, csv.body).toBe(200);
    expect(csv.body.trim().split(/\r?\n/).slice(1).sort()).toEqual(["3333,", "AS-TOP,", "RIPE::AS-TOP,RIPE's"]);

    const imported = await t.call(key, {
      method: "POST",
      url: `/v1/modules/${moduleId}/entries.csv?mode=merge`,
      headers: { "content-type": "text/csv" },
      payload: "asn,comment\nAS-TOP,top\nas-mid,\nAS2914,\n",
    });
    expect(imported.statusCode, imported.body).toBe(200);
    expect(imported.json()).toMatchObject({ created: 2, updated: 1, unchanged: 0 });
    const entries = (await call("GET", `/v1/modules/${moduleId}/as-entries?limit=50`)).json().items;
    expect(entries.map((e: { asn: number | null; as_set: string | null }) => e.asn ?? e.as_set).sort()).toEqual(
      [2914, 3333, "AS-MID", "AS-TOP", "RIPE::AS-TOP"].sort(),
    );
    const bad = await t.call(key, {
      method: "POST",
      url: `/v1/modules/${moduleId}/entries.csv`,
      headers: { "content-type": "text/csv" },
      payload: "asn,comment\nAS-?,x\n",
    });
    expect(bad.statusCode).toBe(400);
  });
});
