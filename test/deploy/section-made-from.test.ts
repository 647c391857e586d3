import { encodePrefixColumns, sha256Hex, verifyBundle } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findBundleSection } from "../../packages/controller/src/db/bundle-sections.js";
import type { Db } from "../../packages/controller/src/db/connect.js";
import { ensureFullSection, openSection, type SectionDeps } from "../../packages/controller/src/services/deploy/bundle-sections.js";
import { createSectionCache } from "../../packages/controller/src/services/deploy/section-cache.js";
import { createSectionColumnsCache } from "../../packages/controller/src/services/deploy/section-columns.js";
import { createRevisionStore } from "../../packages/controller/src/services/revisions/revision-store.js";
import { AGENT_HEADERS } from "../helpers/agent-grpc.js";
import { startTestController, type TestController } from "../helpers/controller.js";
import { until } from "../helpers/wait.js";

// A refresh with speakers stores its revision's full prefix section as the base's full section
// and the delta from it (the body written after the commit): the refresh of 1 % of 1.2M prefixes
// no longer seals and writes 33 MB in its transaction. Every reader gets the same bytes either way.

let t: TestController;
let moduleId: string;
let tenant: string;
let speaker: { id: string; key: string; keys: { key_id: string; public_key: string; status: "active" | "retired" }[] };
let first: number;
let second: number;

const sql = () => t.controller.deps.sql as unknown as Db;
const refresh = async () => (await t.call(t.rootKey, { method: "POST", url: `/v1/modules/${moduleId}/refresh?wait=true` })).json().result.revision_id as number;
const addRange = (cidr: string) => t.call(t.rootKey, { method: "POST", url: `/v1/modules/${moduleId}/ip-range-entries`, payload: { cidr } });
/** The speaker reported running `revisionId` (what prepareSections reads to pick the base). */
const runs = (revisionId: number) => sql()`UPDATE speakers SET applied_revision_id = ${revisionId} WHERE id = ${speaker.id}`;
const fullRow = async (revisionId: number) =>
  (
    await sql()<{ sha256: string; made_from: number | null; made_depth: number; written: boolean }[]>`
      SELECT sha256, made_from, made_depth, body IS NOT NULL AS written FROM bundle_sections WHERE revision_id = ${revisionId} AND base_revision_id = 0`
  )[0];
/** Section deps as another replica's: nothing of this process's caches, a revision store of its own. */
const replica = (policy: { maxDepth?: number } = {}): SectionDeps => ({
  secretBox: t.controller.deps.services.secretBox,
  revisions: createRevisionStore({ chain: policy }),
});
/** The revision's full section as encoding its whole content gives it. */
async function encodedWhole(revisionId: number): Promise<Buffer> {
  const content = (await createRevisionStore().content(sql(), tenant, revisionId))!;
  const column = (f: typeof content.v4) => ({
    length: f.length,
    prefixAt: (i: number) => f.prefixAt(i),
    communitiesAt: (i: number) => f.tagAt(i).communities,
  });
  return encodePrefixColumns(column(content.v4), column(content.v6));
}
/** The full bundle of a revision as the speaker downloads it, verified. */
async function download(revisionId: number) {
  const res = await t.controller.app.inject({
    method: "GET",
    url: `/v1/speakers/${speaker.id}/bundle/${revisionId}`,
    headers: { authorization: `Bearer ${speaker.key}`, ...AGENT_HEADERS },
  });
  expect(res.statusCode, res.body).toBe(200);
  return verifyBundle(res.rawPayload, speaker.keys, { speakerId: speaker.id, tenantId: tenant, lastSequence: null, now: new Date() });
}
async function apply(revisionId: number) {
  const res = await t.call(t.rootKey, { method: "POST", url: "/v1/apply", payload: { revision_id: revisionId, timeout_seconds: 20 } });
  expect(res.statusCode, res.body).toBe(202);
  await until(
    "the bundle",
    async () => (await t.call(speaker.key, { method: "GET", url: `/v1/speakers/${speaker.id}/revisions/latest` })).json().revision_id === revisionId,
  );
  await t.call(t.rootKey, { method: "POST", url: `/v1/jobs/${res.json().job_id}/cancel` });
}

beforeAll(async () => {
  t = await startTestController({ start: { nodeHttps: false } });
  const community = (await t.call(t.rootKey, { method: "POST", url: "/v1/communities", payload: { community: "65000:100", title: "vpn" } })).json();
  moduleId = (
    await t.call(t.rootKey, { method: "POST", url: "/v1/modules", payload: { name: "ranges", type: "IP_RANGES", community_id: community.id } })
  ).json().id;
  // Not adjacent, so each stays a prefix of its own: a one-prefix change is a small delta.
  for (let i = 0; i < 60; i++) await addRange(`11.${i * 2}.0.0/16`);
  first = await refresh();
  const created = (
    await t.call(t.rootKey, { method: "POST", url: "/v1/speakers", payload: { name: "edge", mode: "remote", router_id: "192.0.2.31", asn: 65031 } })
  ).json();
  const enrolled = (
    await t.call(created.enrollment_token, { method: "POST", url: "/v1/nodes/enroll", payload: { hostname: "edge", agent_version: "1.0.0" } })
  ).json();
  speaker = { id: created.id, key: enrolled.api_key, keys: enrolled.signing_keys };
  tenant = enrolled.tenant_id;
  // The speaker runs the first revision, applied as usual (which stores its full section).
  await apply(first);
  await runs(first);
  await addRange("12.0.0.0/16");
  second = await refresh();
}, 120_000);

afterAll(async () => {
  await t?.close();
});

describe("a full prefix section stored as its base's and a delta", () => {
  it("is committed with the refresh without its body, which is written soon after; it holds the bytes the whole content encodes", async () => {
    expect(await fullRow(first)).toMatchObject({ made_from: null, made_depth: 0, written: true });
    const whole = await encodedWhole(second);
    // Right after the refresh: no body yet, made from the revision the speaker runs.
    const row = (await fullRow(second))!;
    expect(row.sha256).toBe(sha256Hex(whole));
    expect(row).toMatchObject({ written: false, made_from: first, made_depth: 1 });
    // Another replica opens it from the base's body and the delta row.
    expect((await openSection(sql(), replica(), tenant, (await findBundleSection(sql(), tenant, second, 0))!)).equals(whole)).toBe(true);
    await apply(second);
    expect((await download(second)).payload.prefixes.v4).toContainEqual(["12.0.0.0/16", ["65000:100"]]);
    // The body is written after the commit (a few seconds: once the apply's agents have fetched their deltas).
    await until("the body written", async () => (await fullRow(second))!.written, 20_000);
    expect(await fullRow(second)).toMatchObject({ made_from: null, made_depth: 0, sha256: sha256Hex(whole) });
    expect((await openSection(sql(), replica(), tenant, (await findBundleSection(sql(), tenant, second, 0))!)).equals(whole)).toBe(true);

    // The next refresh makes its section of the one this process keeps: the stored body is not read back.
    const [{ body }] = (await sql()`SELECT body FROM bundle_sections WHERE revision_id = ${second} AND base_revision_id = 0`) as unknown as [{ body: Buffer }];
    await sql()`UPDATE bundle_sections SET body = ''::bytea WHERE revision_id = ${second} AND base_revision_id = 0`;
    try {
      await runs(second);
      await addRange("12.2.0.0/16");
      const job = (await t.call(t.rootKey, { method: "POST", url: `/v1/modules/${moduleId}/refresh?wait=true` })).json();
      expect(job.result.sections_error).toBeUndefined();
      const next = job.result.revision_id as number;
      expect(await fullRow(next)).toMatchObject({ made_from: second, made_depth: 1, sha256: sha256Hex(await encodedWhole(next)) });
    } finally {
      await sql()`UPDATE bundle_sections SET body = ${body} WHERE revision_id = ${second} AND base_revision_id = 0`;
    }
  }, 60_000);

  it("a replica that never held it serves it before the body is written: from the base's and the delta, or from the content when the base is gone", async () => {
    await runs(second);
    await addRange("13.0.0.0/16");
    // This process's refresh stores no section (the database refuses them meanwhile), so it keeps
    // none in memory either: another replica makes them, with no body yet.
    await sql().unsafe(`CREATE FUNCTION refuse_section() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'sections refused for the test'; END $$`);
    await sql().unsafe("CREATE TRIGGER refuse_section BEFORE INSERT ON bundle_sections FOR EACH ROW EXECUTE FUNCTION refuse_section()");
    let third: number;
    try {
      third = await refresh();
    } finally {
      await sql().unsafe("DROP TRIGGER refuse_section ON bundle_sections");
      await sql().unsafe("DROP FUNCTION refuse_section()");
    }
    expect(await fullRow(third)).toBeUndefined();
    const deps = { ...replica(), columns: createSectionColumnsCache(), sections: createSectionCache(64 * 1024 * 1024) };
    const made = (await ensureFullSection(sql(), deps, tenant, third, second))!;
    expect(made).toMatchObject({ made_from: second, made_depth: 1 });
    const whole = await encodedWhole(third);
    expect(made.sha256).toBe(sha256Hex(whole));
    expect(await fullRow(third)).toMatchObject({ written: false, made_from: second });
    // This process's GetBundle and download open it from the stored rows.
    await apply(third);
    const verified = await download(third);
    expect(verified.section).toBe("full");
    expect(Buffer.from(verified.prefixSection!).equals(whole)).toBe(true);
    // The base's full section gone (a prune took it): made from the revision's content instead.
    await sql()`DELETE FROM bundle_sections WHERE revision_id = ${second} AND base_revision_id = 0`;
    expect((await openSection(sql(), replica(), tenant, made)).equals(whole)).toBe(true);
  });

  it("opening one whose delta does not give its SHA-256 fails rather than serve other bytes", async () => {
    await runs(first);
    await addRange("14.0.0.0/16");
    const fourth = await refresh();
    await sql()`DELETE FROM bundle_sections WHERE revision_id = ${fourth}`;
    const made = (await ensureFullSection(sql(), replica(), tenant, fourth, first))!;
    expect(made.made_from).toBe(first);
    const wrong = { ...made, sha256: sha256Hex(Buffer.from("another section")) };
    await expect(openSection(sql(), replica(), tenant, wrong)).rejects.toThrow(/does not match its SHA-256/);
    expect((await openSection(sql(), replica(), tenant, made)).equals(await encodedWhole(fourth))).toBe(true);
  });

  it("is written whole past the revision storage's chain bound, and always with REVISION_STORAGE=whole", async () => {
    await addRange("15.0.0.0/16");
    const fifth = await refresh();
    await sql()`DELETE FROM bundle_sections WHERE revision_id = ${fifth}`;
    const whole = await ensureFullSection(sql(), replica({ maxDepth: 0 }), tenant, fifth, first);
    expect(whole).toMatchObject({ made_from: null, made_depth: 0 });
    expect(await fullRow(fifth)).toMatchObject({ written: true });
    // A chain: each made from the one before, one delta deeper, until the bound.
    await addRange("16.0.0.0/16");
    const sixth = await refresh();
    await addRange("17.0.0.0/16");
    const seventh = await refresh();
    await sql()`DELETE FROM bundle_sections WHERE revision_id IN (${sixth}, ${seventh})`;
    const deps = replica({ maxDepth: 1 });
    expect(await ensureFullSection(sql(), deps, tenant, sixth, fifth)).toMatchObject({ made_from: fifth, made_depth: 1 });
    expect(await ensureFullSection(sql(), deps, tenant, seventh, sixth)).toMatchObject({ made_from: null, made_depth: 0 });
    expect((await openSection(sql(), replica(), tenant, (await ensureFullSection(sql(), deps, tenant, sixth))!)).equals(await encodedWhole(sixth))).toBe(true);
  });
});
