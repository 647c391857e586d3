import { type BundleHeaderV2, encodePrefixColumns, pagesOf, sha256Hex, splitBundleV2, verifyBundle } from "@rlc/shared/bundle";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureDeltaSection, ensureFullSection } from "../../packages/controller/src/services/deploy/bundle-sections.js";
import { createRevisionStore } from "../../packages/controller/src/services/revisions/revision-store.js";
import type { AgentServiceClient } from "../../packages/proto/src/index.js";
import { AGENT_HEADERS, agentClient, getBundle, reportStatus } from "../helpers/agent-grpc.js";
import { type LiveController, startLiveController, until } from "../helpers/live-controller.js";

// rl-bundle/2 on the controller: the prefix section is stored once per revision for every
// speaker, and an apply to a speaker that reported running an earlier revision also issues the
// delta from it, which GetBundle and the HTTP route serve when the agent names that base.

let t: LiveController;
let client: AgentServiceClient;
let moduleId: string;
const speakers: { id: string; key: string; tenant: string; keys: { key_id: string; public_key: string; status: "active" | "retired" }[] }[] = [];

const sql = () => t.controller.deps.sql;
const refresh = async () => (await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/refresh?wait=true`)).json().result.revision_id as number;
async function applyAndWait(revisionId: number) {
  const apply = await t.call(t.rootKey, "POST", "/v1/apply", { revision_id: revisionId, timeout_seconds: 20 });
  expect(apply.statusCode, apply.body).toBe(202);
  for (const s of speakers) {
    await until("the bundle", async () => (await t.call(s.key, "GET", `/v1/speakers/${s.id}/revisions/latest`)).json().revision_id === revisionId);
  }
  await t.call(t.rootKey, "POST", `/v1/jobs/${apply.json().job_id}/cancel`);
}
/** Section deps over a revision store of their own, counting the reads of revision contents. */
function countingDeps() {
  const store = createRevisionStore();
  let reads = 0;
  const deps = {
    secretBox: t.controller.deps.services.secretBox,
    revisions: {
      ...store,
      content: (...args: Parameters<typeof store.content>) => {
        reads++;
        return store.content(...args);
      },
    },
  };
  return { deps, reads: () => reads };
}
const bytesOf = async (s: (typeof speakers)[number], revisionId: number, base = 0) =>
  Buffer.concat((await getBundle(client, s.key, s.id, revisionId, base)).map((c) => c.data));

let first: number;
let second: number;

beforeAll(async () => {
  t = await startLiveController();
  client = agentClient(t.grpcAddress, t.grpcCredentials);
  const community = (await t.call(t.rootKey, "POST", "/v1/communities", { community: "65000:100", title: "vpn" })).json();
  moduleId = (await t.call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES", community_id: community.id })).json().id;
  // Not adjacent, so the revision keeps forty prefixes rather than aggregating them.
  for (let i = 0; i < 40; i++) await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: `11.${i * 2}.0.0/16` });
  first = await refresh();
  for (const name of ["edge-a", "edge-b"]) {
    const speaker = (await t.call(t.rootKey, "POST", "/v1/speakers", { name, mode: "remote", router_id: "192.0.2.31", asn: 65031 })).json();
    const enrolled = (await t.call(speaker.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: name, agent_version: "1.0.0" })).json();
    speakers.push({ id: speaker.id, key: enrolled.api_key, tenant: enrolled.tenant_id, keys: enrolled.signing_keys });
  }
  await applyAndWait(first);
  // Both agents run the first revision; then one prefix of forty changes.
  for (const s of speakers)
    await reportStatus(client, s.key, { speaker_id: s.id, reason: "REPORT_REASON_APPLIED", applied_revision_id: first, applied_sequence: 1 });
  await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "12.0.0.0/16" });
  second = await refresh();
  await applyAndWait(second);
}, 120_000);

afterAll(async () => {
  client?.close();
  await t?.close();
});

describe("rl-bundle/2 sections and deltas", () => {
  it("each revision's prefix section is stored once, whatever the number of speakers", async () => {
    const rows = await sql()<
      { revision_id: number; base_revision_id: number }[]
    >`SELECT revision_id, base_revision_id FROM bundle_sections ORDER BY revision_id, base_revision_id`;
    expect(rows).toEqual([
      { revision_id: first, base_revision_id: 0 },
      { revision_id: second, base_revision_id: 0 },
      { revision_id: second, base_revision_id: first },
    ]);
  });

  it("an agent naming the revision it runs gets the delta, over gRPC and HTTP alike, and it verifies against that revision's prefixes", async () => {
    const s = speakers[0]!;
    const full = await bytesOf(s, second);
    const delta = await bytesOf(s, second, first);
    expect(delta.length).toBeLessThan(full.length);
    const http = await t.controller.app.inject({
      method: "GET",
      url: `/v1/speakers/${s.id}/bundle/${second}?base_revision=${first}`,
      headers: { authorization: `Bearer ${s.key}`, ...AGENT_HEADERS },
    });
    expect(http.statusCode).toBe(200);
    expect(http.rawPayload.equals(delta)).toBe(true);
    const opts = { speakerId: s.id, tenantId: s.tenant, lastSequence: 1, now: new Date() };
    const base = await verifyBundle(await bytesOf(s, first), s.keys, { ...opts, lastSequence: null });
    const fromDelta = await verifyBundle(delta, s.keys, { ...opts, base: { revision_id: first, section: base.prefixSection! } });
    const fromFull = await verifyBundle(full, s.keys, opts);
    expect(fromDelta.section).toBe("delta");
    expect(fromDelta.payload).toEqual(fromFull.payload);
    expect(fromFull.payload.prefixes.v4).toContainEqual(["12.0.0.0/16", ["65000:100"]]);
    expect(fromFull.payload.prefixes.v4).toHaveLength(41);
  });

  it("a refresh that makes a revision builds its section and the delta from what the speakers run, before any apply", async () => {
    await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "13.0.0.0/16" });
    const third = await refresh();
    // Committed with the revision: there when the refresh answers, before an apply can ask.
    const rows = () =>
      sql()<
        { revision_id: number; base_revision_id: number }[]
      >`SELECT revision_id, base_revision_id FROM bundle_sections WHERE revision_id = ${third} ORDER BY base_revision_id`;
    // The agents reported running the first revision only: that is the base prepared.
    expect(await rows()).toEqual([
      { revision_id: third, base_revision_id: 0 },
      { revision_id: third, base_revision_id: first },
    ]);
    // Its full section was made from the first's bytes and the delta: the bytes of its prefixes encoded whole all the same.
    const content = (await createRevisionStore().content(sql(), speakers[0]!.tenant, third))!;
    const column = (f: typeof content.v4) => ({
      length: f.length,
      prefixAt: (i: number) => f.prefixAt(i),
      communitiesAt: (i: number) => f.tagAt(i).communities,
    });
    const [stored] = await sql()<{ sha256: string }[]>`SELECT sha256 FROM bundle_sections WHERE revision_id = ${third} AND base_revision_id = 0`;
    expect(stored!.sha256).toBe(sha256Hex(encodePrefixColumns(column(content.v4), column(content.v6))));
  });

  it("a refresh whose sections cannot be built keeps its revision and says so; its apply builds them", async () => {
    // The database refuses every new section while the trigger is there.
    await sql().unsafe(`CREATE FUNCTION refuse_section() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'sections refused for the test'; END $$`);
    await sql().unsafe("CREATE TRIGGER refuse_section BEFORE INSERT ON bundle_sections FOR EACH ROW EXECUTE FUNCTION refuse_section()");
    let revision: number;
    try {
      await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "14.0.0.0/16" });
      const job = (await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/refresh?wait=true`)).json();
      expect(job.status).toBe("succeeded");
      expect(job.result.sections_error).toMatch(/sections refused for the test/);
      revision = job.result.revision_id;
      expect((await t.call(t.rootKey, "GET", `/v1/revisions/${revision}`)).statusCode).toBe(200);
    } finally {
      await sql().unsafe("DROP TRIGGER refuse_section ON bundle_sections");
      await sql().unsafe("DROP FUNCTION refuse_section()");
    }
    await applyAndWait(revision);
    const s = speakers[1]!;
    const verified = await verifyBundle(await bytesOf(s, revision), s.keys, { speakerId: s.id, tenantId: s.tenant, lastSequence: null, now: new Date() });
    expect(verified.payload.prefixes.v4).toContainEqual(["14.0.0.0/16", ["65000:100"]]);
  });

  it("a base the controller issued no delta from gets the full bundle", async () => {
    const s = speakers[1]!;
    const full = await bytesOf(s, second);
    expect((await bytesOf(s, second, second + 100)).equals(full)).toBe(true);
    const opts = { speakerId: s.id, tenantId: s.tenant, lastSequence: null, now: new Date() };
    expect((await verifyBundle(full, s.keys, opts)).section).toBe("full");
  });
  it("a section asked for twice at once in this process is built once, and a caller inside a transaction still gets it", async () => {
    await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "14.0.0.0/16" });
    const fourth = await refresh();
    const rows = () => sql()<{ sha256: string }[]>`SELECT sha256 FROM bundle_sections WHERE revision_id = ${fourth} AND base_revision_id = 0`;
    expect(await rows()).toHaveLength(1);
    await sql()`DELETE FROM bundle_sections WHERE revision_id = ${fourth}`;
    // Each build reads the revision's content once.
    const { deps, reads } = countingDeps();
    const tenant = speakers[0]!.tenant;
    // Two callers at once (two applies of a revision whose section is missing): the second waits for the first build.
    const [a, b] = await Promise.all([ensureFullSection(sql(), deps, tenant, fourth), ensureFullSection(sql(), deps, tenant, fourth)]);
    expect(reads()).toBe(1);
    expect(b).toEqual(a);
    expect(await rows()).toEqual([{ sha256: a!.sha256 }]);
    // Inside a transaction a caller never waits for a build on the pool (on the embedded database
    // that build could need the transaction's own connection): it reads the stored row itself.
    await sql()`DELETE FROM bundle_sections WHERE revision_id = ${fourth}`;
    const [inTx, onPool] = await Promise.all([
      sql().begin((tx) => ensureFullSection(tx, deps, tenant, fourth)),
      ensureFullSection(sql(), deps, tenant, fourth),
    ]);
    expect(inTx!.sha256).toBe(a!.sha256);
    expect(onPool!.sha256).toBe(a!.sha256);
  });

  it("a delta larger than half the full section is not stored, and is not worked out again for the next apply", async () => {
    const other = (await t.call(t.rootKey, "POST", "/v1/modules", { name: "more-ranges", type: "IP_RANGES" })).json().id;
    for (let i = 0; i < 120; i++) await t.call(t.rootKey, "POST", `/v1/modules/${other}/ip-range-entries`, { cidr: `21.${i * 2}.0.0/16` });
    const fifth = await refresh();
    // Against the first revision (41 prefixes) most of the 161 are new: the full bundle is smaller.
    expect((await sql()`SELECT 1 FROM bundle_sections WHERE revision_id = ${fifth} AND base_revision_id = ${first}`).length).toBe(0);
    const { deps, reads } = countingDeps();
    const tenant = speakers[0]!.tenant;
    const full = (await ensureFullSection(sql(), deps, tenant, fifth))!;
    expect(await ensureDeltaSection(sql(), deps, tenant, first, full)).toBeNull();
    const afterFirst = reads();
    expect(afterFirst).toBeGreaterThan(0);
    expect(await ensureDeltaSection(sql(), deps, tenant, first, full)).toBeNull();
    expect(reads()).toBe(afterFirst);
    // A delta that is worth it is still built and stored.
    expect(await ensureDeltaSection(sql(), deps, tenant, second, (await ensureFullSection(sql(), deps, tenant, second + 1))!)).not.toBeNull();
  });

  it("the process that builds a section serves it from memory, without reading it back from the database", async () => {
    await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "15.0.0.0/16" });
    const sixth = await refresh();
    // Were the stream to read the stored section, it would find nothing to send.
    await sql()`UPDATE bundle_sections SET body = ''::bytea WHERE revision_id = ${sixth} AND base_revision_id = 0`;
    await applyAndWait(sixth);
    const s = speakers[0]!;
    const bytes = await bytesOf(s, sixth);
    const verified = await verifyBundle(bytes, s.keys, { speakerId: s.id, tenantId: s.tenant, lastSequence: null, now: new Date() });
    expect(verified.section).toBe("full");
    expect(verified.payload.prefixes.v4).toContainEqual(["15.0.0.0/16", ["65000:100"]]);
  });

  it("the signed header names the page root of the revision's section (rl-prefix-pages/1) in full and delta bundles; a section stored without one (before 0026) gives bundles without it", async () => {
    const s = speakers[0]!;
    const opts = { speakerId: s.id, tenantId: s.tenant, lastSequence: null, now: new Date() };
    const headerOf = (bytes: Buffer) => JSON.parse(Buffer.from(splitBundleV2(bytes).header).toString("utf8")) as BundleHeaderV2;
    const full = await verifyBundle(await bytesOf(s, second), s.keys, opts);
    const root = pagesOf(full.prefixSection!).root;
    expect(headerOf(await bytesOf(s, second)).prefixes_pages_sha256).toBe(root);
    expect(headerOf(await bytesOf(s, second, first))).toMatchObject({ section: "delta", base_revision_id: first, prefixes_pages_sha256: root });
    // The full bundle's verification checked the root and hands its pages on (what an agent keeps for the next delta).
    expect(full.prefixPages?.root).toBe(root);
    const stored = await sql()<{ base_revision_id: number; prefixes_pages_sha256: string | null }[]>`
      SELECT base_revision_id, prefixes_pages_sha256 FROM bundle_sections WHERE revision_id = ${second} ORDER BY base_revision_id`;
    expect(stored).toEqual([
      { base_revision_id: 0, prefixes_pages_sha256: root },
      { base_revision_id: first, prefixes_pages_sha256: root },
    ]);

    // A speaker running the newest revision, whose next revision's rows lack the root, as rows stored before 0026 do.
    const [{ running }] = (await sql()`SELECT max(revision_id)::int AS running FROM bundle_sections`) as unknown as [{ running: number }];
    const sequence = (await verifyBundle(await bytesOf(s, running), s.keys, opts)).payload.sequence;
    await reportStatus(client, s.key, { speaker_id: s.id, reason: "REPORT_REASON_APPLIED", applied_revision_id: running, applied_sequence: sequence });
    await t.call(t.rootKey, "POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "16.0.0.0/16" });
    const old = await refresh();
    await sql()`UPDATE bundle_sections SET prefixes_pages_sha256 = NULL WHERE revision_id = ${old}`;
    await applyAndWait(old);
    const oldFull = await bytesOf(s, old);
    const oldDelta = await bytesOf(s, old, running);
    expect(headerOf(oldFull)).not.toHaveProperty("prefixes_pages_sha256");
    expect(headerOf(oldDelta)).toMatchObject({ section: "delta", base_revision_id: running });
    expect(headerOf(oldDelta)).not.toHaveProperty("prefixes_pages_sha256");
    const verified = await verifyBundle(oldFull, s.keys, opts);
    expect(verified.prefixPages).toBeUndefined();
    expect(verified.payload.prefixes.v4).toContainEqual(["16.0.0.0/16", ["65000:100"]]);
    const base = (await verifyBundle(await bytesOf(s, running), s.keys, opts)).prefixSection!;
    expect((await verifyBundle(oldDelta, s.keys, { ...opts, base: { revision_id: running, section: base } })).payload).toEqual(verified.payload);
  });
});
