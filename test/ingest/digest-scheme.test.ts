import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// A revision stored before migration 0031 has the flat SHA-256 of its lines as its digest
// (scheme 1); this controller's digest hashes the lines' groups (scheme 2). An upgrade must not
// make the first refresh store a revision equal to the last one.

let t: TestController;
let key: string;

const call = async (method: "GET" | "POST" | "DELETE", url: string, payload?: object) => {
  const res = await t.call(key, { method, url, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
const refresh = (moduleId: string) => call("POST", `/v1/modules/${moduleId}/refresh?wait=true`);
const rows = () =>
  t.controller.db.sql<{ revision_id: number; digest: string; digest_scheme: number }[]>`
    SELECT revision_id, digest, digest_scheme FROM revisions ORDER BY revision_id`;
/** Scheme 1: the SHA-256 of `prefix communities\n` a prefix, IPv4 then IPv6, as the prefixes' list gives them. */
const flatDigest = async (revisionId: number) => {
  const items = (await call("GET", `/v1/revisions/${revisionId}/prefixes?limit=500`)).items as { prefix: string; communities: string[] }[];
  const text = items.map((p) => `${p.prefix} ${p.communities.join(",")}\n`).join("");
  return `sha256:${createHash("sha256").update(text).digest("hex")}`;
};

beforeAll(async () => {
  t = await startTestController();
  key = t.rootKey;
});
afterAll(async () => {
  await t?.close();
});

describe("the revision digest across the upgrade that changed it", () => {
  let moduleId: string;
  let first: number;
  let flat: string;

  it("a refresh stores its digest as scheme 2, which is not the flat SHA-256 of the lines", async () => {
    const communityId = (await call("POST", "/v1/communities", { community: "65000:31", title: "digest" })).id;
    moduleId = (await call("POST", "/v1/modules", { name: "digest-ranges", type: "IP_RANGES", community_id: communityId })).id;
    for (const cidr of ["11.0.0.0/23", "11.64.0.0/24", "12.0.0.0/24", "2a00:1450::/32", "2001:db9::/48"]) {
      await call("POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr });
    }
    const job = await refresh(moduleId);
    expect(job.result.unchanged).toBe(false);
    first = job.result.revision_id;
    const [row] = await rows();
    expect(row).toMatchObject({ revision_id: first, digest_scheme: 2 });
    flat = await flatDigest(first);
    expect(row!.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(row!.digest).not.toBe(flat);
  });

  it("a refresh that changes nothing after the upgrade stores no revision when the current one has the flat digest", async () => {
    // The revision as a controller before migration 0031 stored it.
    await t.controller.db.sql`UPDATE revisions SET digest = ${flat}, digest_scheme = 1 WHERE revision_id = ${first}`;
    const job = await refresh(moduleId);
    expect(job.result).toMatchObject({ unchanged: true, revision_id: first });
    expect((await rows()).map((r) => r.revision_id)).toEqual([first]);
    expect((await call("GET", `/v1/revisions/${first}`)).digest).toBe(flat);
  });

  it("a change stores a revision of scheme 2; a rollback to the old one keeps its digest and scheme", async () => {
    await call("POST", `/v1/modules/${moduleId}/ip-range-entries`, { cidr: "13.0.0.0/24" });
    const job = await refresh(moduleId);
    expect(job.result.unchanged).toBe(false);
    const second = job.result.revision_id;
    expect((await rows()).find((r) => r.revision_id === second)).toMatchObject({ digest_scheme: 2 });
    expect((await rows()).find((r) => r.revision_id === second)!.digest).not.toBe(await flatDigest(second));
    const back = await call("POST", `/v1/revisions/${first}/rollback`);
    const rolled = (await rows()).at(-1)!;
    expect(rolled.revision_id).toBeGreaterThan(second);
    expect(back.revision_id ?? rolled.revision_id).toBe(rolled.revision_id);
    expect(rolled).toMatchObject({ digest: flat, digest_scheme: 1 });
  });
});
