import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { startFeedServer } from "../helpers/feeds.js";

// Delegated statistics in the registries' format, written by the test: two registries, one file
// on disk and one served over HTTP, merged by COUNTRY_SOURCE=delegated:<path>,<url>.
const RIPE = `2|ripencc|1732665600|5|19830705|20261126|+0100
ripencc|*|ipv4|*|3|summary
ripencc|*|ipv6|*|1|summary
ripencc|NL|ipv4|193.0.0.0|2048|19930901|allocated
ripencc|NL|ipv4|193.0.8.0|768|19930901|assigned
ripencc|ZZ|ipv4|195.0.0.0|1024||reserved
ripencc|NL|ipv6|2001:67c:2e8::|48|20040101|assigned
ripencc|DE|ipv4|194.0.0.0|256|19930901|allocated
`;
const ARIN = `2.3|arin|1732665601|2|19700101|20261126|-0500
arin|*|ipv4|*|2|summary
arin|NL|ipv4|23.128.0.0|1000|20190101|assigned|0a1b2c
arin||ipv4|24.0.0.0|256||available|
`;

let t: TestController;
let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let dir: string;

const call = async (method: string, url: string, payload?: object) => {
  const res = await t.call(t.rootKey, { method: method as "POST", url, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "rlc-delegated-"));
  await writeFile(join(dir, "delegated-ripencc-extended-latest"), RIPE);
  feeds = await startFeedServer();
  feeds.text("/pub/stats/arin/delegated-arin-extended-latest", ARIN.trimEnd().split("\n"));
  t = await startTestController({
    env: {
      APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
      COUNTRY_SOURCE: `delegated:${join(dir, "delegated-ripencc-extended-latest")},${feeds.base}/pub/stats/arin/delegated-arin-extended-latest`,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await feeds?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("COUNTRY modules", () => {
  it("a refresh announces the country's allocated and assigned space from every registry's file, recorded as source country, origin NL", async () => {
    const community = await call("POST", "/v1/communities", { community: "65000:31", title: "NL" });
    const module = await call("POST", "/v1/modules", { name: "netherlands", type: "COUNTRY", community_id: community.id });
    await call("POST", `/v1/modules/${module.id}/country-entries`, { country: "nl" });
    const job = await call("POST", `/v1/modules/${module.id}/refresh?wait=true`);
    expect(job.result).toMatchObject({ unchanged: false, warnings: [], modules: [{ module_id: module.id, sources_ok: 1, sources_failed: 0 }] });
    const prefixes = await call("GET", `/v1/revisions/${job.result.revision_id}/prefixes?limit=100`);
    expect(prefixes.items.map((p: { prefix: string }) => p.prefix)).toEqual([
      "23.128.0.0/23",
      "23.128.2.0/24",
      "23.128.3.0/25",
      "23.128.3.128/26",
      "23.128.3.192/27",
      "23.128.3.224/29",
      "193.0.0.0/21",
      "193.0.8.0/23",
      "193.0.10.0/24",
      "2001:67c:2e8::/48",
    ]);
    const rows = await t.controller.db.sql<{ source: string; origin: string }[]>`SELECT source, origin FROM snapshots WHERE module_id = ${module.id}`;
    expect(rows.map((r) => [r.source, r.origin])).toEqual([["country", "NL"]]);

    const lookup = await call("GET", "/v1/lookup?q=193.0.10.7");
    expect(lookup.matches).toEqual([
      expect.objectContaining({ layer: "snapshot", module_id: module.id, module_type: "COUNTRY", source: "country", origin: "NL", prefix: "193.0.10.0/24" }),
    ]);
  });

  it("each country of a module is a source of its own", async () => {
    const module = (await call("GET", "/v1/modules?type=COUNTRY")).items[0];
    await call("POST", `/v1/modules/${module.id}/country-entries`, { country: "DE" });
    const job = await call("POST", `/v1/modules/${module.id}/refresh?wait=true`);
    expect(job.result.modules[0]).toMatchObject({ sources_ok: 2, sources_failed: 0 });
    const rows = await t.controller.db.sql<{ origin: string; prefixes: string[] }[]>`
      SELECT origin, prefixes FROM snapshots WHERE module_id = ${module.id} AND source = 'country' ORDER BY origin`;
    expect(rows.map((r) => [r.origin, r.prefixes.length])).toEqual([
      ["DE", 1],
      ["NL", 10],
    ]);
    expect((await call("GET", "/v1/lookup?q=194.0.0.1")).matches).toEqual([expect.objectContaining({ source: "country", origin: "DE" })]);
  });
});
