import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";
import { startFeedServer } from "../helpers/feeds.js";

// RPKI origin validation end to end: a Routinator-style VRP document and RIPEstat's API served
// by a real local HTTP server; the controller reads the document at every use
// (RPKI_REFRESH_MINUTES=0) so that each test's document is the one validated.
let t: TestController;
let feeds: Awaited<ReturnType<typeof startFeedServer>>;
let key: string;

const hoursAgo = (h: number) => Math.floor(Date.now() / 1000) - h * 3600;
const routinator = (generated: number) => ({
  metadata: { generated, generatedTime: new Date(generated * 1000).toISOString() },
  roas: [
    { asn: "AS13335", prefix: "1.1.1.0/24", maxLength: 24, ta: "apnic" },
    { asn: "AS13335", prefix: "1.0.0.0/22", maxLength: 22, ta: "apnic" },
    { asn: "AS13335", prefix: "104.16.0.0/12", maxLength: 20, ta: "arin" },
    { asn: "AS13335", prefix: "2606:4700::/32", maxLength: 48, ta: "arin" },
  ],
});

const call = (method: "GET" | "POST" | "PATCH", url: string, payload?: object) => t.call(key, { method, url, ...(payload === undefined ? {} : { payload }) });
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
const prefixesOf = async (revisionId: number) =>
  (await call("GET", `/v1/revisions/${revisionId}/prefixes?limit=500`)).json().items.map((p: { prefix: string }) => p.prefix);

beforeAll(async () => {
  feeds = await startFeedServer();
  feeds.json("/vrps.json", routinator(hoursAgo(1)));
  feeds.ripestat(13335, ["1.1.1.0/24", "1.0.0.0/24", "2606:4700:10::/44"]); // valid, invalid by length, valid
  feeds.ripestat(64500, ["104.16.0.0/13"]); // invalid by origin
  feeds.ripestat(15169, ["8.8.8.0/24"]); // not found
  t = await startTestController({
    env: {
      APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
      ASN_SOURCE: "ripestat",
      ASN_SOURCE_URL: feeds.base,
      RPKI_VRP_SOURCE: `${feeds.base}/vrps.json`,
      RPKI_REFRESH_MINUTES: "0",
      RPKI_MAX_AGE_HOURS: "24",
    },
  });
  key = t.rootKey;
});
afterAll(async () => {
  await t?.close();
  await feeds?.close();
});

describe("RPKI origin validation", () => {
  let moduleId: string;

  it("drop_invalid leaves invalid prefixes (by origin and by length) out of the revision, keeps not-found ones, and says so", async () => {
    const community = await post("/v1/communities", { community: "65000:6811", title: "rpki" });
    const created = await post("/v1/modules", { name: "origins", type: "AS_PREFIXES", community_id: community.id, rpki_policy: "drop_invalid" });
    expect(created.rpki_policy).toBe("drop_invalid");
    moduleId = created.id;
    for (const asn of [13335, 64500, 15169]) await post(`/v1/modules/${moduleId}/as-entries`, { asn });

    const job = await refresh(moduleId);
    expect(job.result.modules[0].rpki).toEqual({ valid: 2, invalid: 2, not_found: 1, dropped: 2, available: true });
    expect(job.result.rpki).toMatchObject({ available: true, vrp_count: 4 });
    const warning = job.result.warnings.find((w: { source: string }) => w.source === "rpki");
    expect(warning.message).toMatch(/2 RPKI-invalid prefixes dropped/);
    expect(warning.message).toContain("104.16.0.0/13 from AS64500");
    expect(warning.message).toContain("1.0.0.0/24 from AS13335");
    expect(await prefixesOf(job.result.revision_id)).toEqual(["1.1.1.0/24", "8.8.8.0/24", "2606:4700:10::/44"]);
    const revision = (await call("GET", `/v1/revisions/${job.result.revision_id}`)).json();
    expect(revision.modules.find((m: { module_id: string }) => m.module_id === moduleId).rpki_dropped).toBe(2);

    // The snapshot keeps what the ASN source said; lookup tells each ASN-origin match's state.
    const invalid = (await call("GET", "/v1/lookup?q=104.16.0.1")).json();
    expect(invalid.matches).toContainEqual(expect.objectContaining({ layer: "snapshot", origin: "64500", rpki: "invalid" }));
    expect(invalid.revision).toBeNull();
    const valid = (await call("GET", "/v1/lookup?q=1.1.1.1")).json();
    expect(valid.matches).toContainEqual(expect.objectContaining({ layer: "snapshot", origin: "13335", rpki: "valid" }));
    const notFound = (await call("GET", "/v1/lookup?q=8.8.8.8")).json();
    expect(notFound.matches).toContainEqual(expect.objectContaining({ layer: "snapshot", origin: "15169", rpki: "not_found" }));
  });

  it("a dry run answers what drop_invalid would drop and makes no job and no revision", async () => {
    const before = (await call("GET", "/v1/revisions?limit=100")).json().items.length;
    const res = await call("POST", `/v1/modules/${moduleId}/refresh`, { dry_run: true });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ dry_run: true, rpki: { available: true } });
    expect(body.modules).toEqual([
      {
        module_id: moduleId,
        rpki_policy: "drop_invalid",
        valid: 2,
        invalid: 2,
        not_found: 1,
        would_drop: 2,
        invalid_prefixes: expect.arrayContaining([
          { prefix: "104.16.0.0/13", origin: 64500 },
          { prefix: "1.0.0.0/24", origin: 13335 },
        ]),
      },
    ]);
    expect((await call("GET", "/v1/revisions?limit=100")).json().items.length).toBe(before);
    expect((await call("POST", "/v1/modules/00000000-0000-7000-8000-000000000000/refresh", { dry_run: true })).statusCode).toBe(404);
  });

  it("report keeps invalid prefixes and names them", async () => {
    const patched = await call("PATCH", `/v1/modules/${moduleId}`, { rpki_policy: "report" });
    expect(patched.statusCode, patched.body).toBe(200);
    const job = await refresh(moduleId);
    expect(job.result.modules[0].rpki).toEqual({ valid: 2, invalid: 2, not_found: 1, dropped: 0, available: true });
    expect(job.result.warnings.find((w: { source: string }) => w.source === "rpki").message).toMatch(/kept \(rpki_policy report\)/);
    expect(await prefixesOf(job.result.revision_id)).toContain("104.16.0.0/13");
    const bad = await call("PATCH", `/v1/modules/${moduleId}`, { rpki_policy: "strict" });
    expect(bad.statusCode).toBe(400);
  });

  it("an expired or unreadable VRP document makes validation unavailable: reported, nothing dropped", async () => {
    await call("PATCH", `/v1/modules/${moduleId}`, { rpki_policy: "drop_invalid" });
    feeds.json("/vrps.json", routinator(hoursAgo(30)));
    let job = await refresh(moduleId);
    expect(job.result.rpki).toMatchObject({ available: false, reason: expect.stringMatching(/more than 24 hours ago/) });
    expect(job.result.modules[0].rpki).toMatchObject({ dropped: 0, available: false });
    expect(job.result.warnings).toContainEqual(
      expect.objectContaining({ source: "rpki", message: expect.stringMatching(/unavailable, nothing validated or dropped/) }),
    );
    expect(await prefixesOf(job.result.revision_id)).toContain("104.16.0.0/13");
    expect((await call("GET", "/v1/lookup?q=104.16.0.1")).json().matches).toContainEqual(expect.objectContaining({ origin: "64500", rpki: "unavailable" }));

    feeds.routes.set("/vrps.json", { status: 500, body: "down" });
    job = await refresh(moduleId);
    expect(job.result.rpki).toMatchObject({ available: false, reason: expect.stringMatching(/failed to load/) });
    expect(await prefixesOf(job.result.revision_id)).toContain("104.16.0.0/13");

    feeds.json("/vrps.json", routinator(hoursAgo(1)));
    job = await refresh(moduleId);
    expect(job.result.rpki.available).toBe(true);
    expect(await prefixesOf(job.result.revision_id)).not.toContain("104.16.0.0/13");
  });
});
