import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

let t: TestController;

const call = async (method: string, url: string, payload?: object) => {
  const res = await t.call(t.rootKey, { method: method as "POST", url, ...(payload ? { payload } : {}) });
  if (res.statusCode >= 400) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
  return res.json();
};
const prefixesOf = async (revisionId: number) =>
  (await call("GET", `/v1/revisions/${revisionId}/prefixes?limit=100`)).items.map((p: { prefix: string; communities: string[] }) => [p.prefix, p.communities]);

beforeAll(async () => {
  t = await startTestController();
});
afterAll(async () => t?.close());

describe("exclude modules (never steer)", () => {
  let vpn: { id: string };
  let never: { id: string };
  let revisionId: number;

  it("cut their prefixes out of every announced prefix, the rest kept as the fewest CIDRs, counted per module and in dropped_prefix_count", async () => {
    const x = await call("POST", "/v1/communities", { community: "65000:100", title: "via-vpn" });
    const y = await call("POST", "/v1/communities", { community: "65000:200", title: "never-used" });
    vpn = await call("POST", "/v1/modules", { name: "vpn", type: "IP_RANGES", community_id: x.id });
    never = await call("POST", "/v1/modules", { name: "bank", type: "IP_RANGES", community_id: y.id, action: "exclude" });
    expect(vpn).toMatchObject({ action: "announce" });
    expect(never).toMatchObject({ action: "exclude" });
    await call("POST", `/v1/modules/${vpn.id}/ip-range-entries`, { cidr: "11.0.0.0/23" });
    await call("POST", `/v1/modules/${vpn.id}/ip-range-entries`, { cidr: "12.0.0.0/24" });
    await call("POST", `/v1/modules/${never.id}/ip-range-entries`, { cidr: "11.0.0.128/25" });
    await call("POST", `/v1/modules/${never.id}/ip-range-entries`, { cidr: "13.0.0.0/24" }); // announced by nobody

    const job = await call("POST", "/v1/modules/refresh?wait=true");
    revisionId = job.result.revision_id;
    expect(await prefixesOf(revisionId)).toEqual([
      ["11.0.0.0/25", ["65000:100"]],
      ["11.0.1.0/24", ["65000:100"]],
      ["12.0.0.0/24", ["65000:100"]],
    ]);
    const revision = await call("GET", `/v1/revisions/${revisionId}`);
    expect(revision).toMatchObject({ input_prefix_count: 2, dropped_prefix_count: 1, prefix_count_v4: 3 });
    const byId = new Map(revision.modules.map((m: { module_id: string }) => [m.module_id, m]));
    expect(byId.get(vpn.id)).toMatchObject({ action: "announce", prefix_count: 3, excluded_prefix_count: 1 });
    expect(byId.get(never.id)).toMatchObject({ action: "exclude", prefix_count: 0, excluded_prefix_count: 1 });
    // The exclude module's community is announced nowhere.
    expect(await call("GET", `/v1/revisions/${revisionId}/prefixes?community=65000:200`)).toMatchObject({ items: [] });
  });

  it("lookup says whether an address is announced, and why not", async () => {
    const announced = await call("GET", "/v1/lookup?q=11.0.1.5");
    expect(announced).toMatchObject({
      announced: true,
      announced_prefix: "11.0.1.0/24",
      communities: ["65000:100"],
      excluded_by: [],
      answer: "announced as 11.0.1.0/24 with 65000:100 — from module vpn",
    });
    const cut = await call("GET", "/v1/lookup?q=11.0.0.200");
    expect(cut).toMatchObject({
      announced: false,
      announced_prefix: null,
      excluded_by: [{ kind: "module", module_id: never.id, module_name: "bank", prefix: "11.0.0.128/25" }],
      answer: "not announced: excluded by module bank",
    });
    expect((await call("GET", "/v1/lookup?q=14.0.0.1")).answer).toBe("not announced: in no enabled list");
  });

  it("turned back to announce, a module's prefixes are announced with its community", async () => {
    await call("PATCH", `/v1/modules/${never.id}`, { action: "announce" });
    const job = await call("POST", "/v1/modules/refresh?wait=true");
    expect(job.result.revision_id).toBeGreaterThan(revisionId);
    expect(await prefixesOf(job.result.revision_id)).toEqual([
      ["11.0.0.0/23", ["65000:100"]],
      ["11.0.0.128/25", ["65000:100", "65000:200"]],
      ["12.0.0.0/24", ["65000:100"]],
      ["13.0.0.0/24", ["65000:200"]],
    ]);
    const audit = await call("GET", "/v1/audit?resource_type=module&limit=50");
    expect(audit.items.find((a: { summary: string }) => a.summary === "module bank updated").changes).toEqual({ action: { from: "exclude", to: "announce" } });
  });

  it("refuses an action it does not know", async () => {
    const res = await t.call(t.rootKey, { method: "PATCH", url: `/v1/modules/${never.id}`, payload: { action: "drop" } });
    expect(res.statusCode).toBe(400);
  });
});
