import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestController, type TestController } from "../helpers/controller.js";

// The agent renders for the BIRD it runs (shared/bird/version.ts): BIRD 2.17+ and 3.1+ take
// `authentication md5;` beside a peer's password, 2.0 and 3.0 refuse it. The revision preview
// shows what the speaker will load, so it renders for the version the speaker last reported.

let t: TestController;
let speakerId: string;
let nodeKey: string;
let revisionId: number;
const call = (key: string, method: "GET" | "POST", url: string, payload?: object) => t.call(key, { method, url, ...(payload ? { payload } : {}) });
const preview = async (query: string) => {
  const res = await call(t.rootKey, "GET", `/v1/revisions/${revisionId}/preview${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { bird_version: string | null; bird_config_excerpt: string };
};
const report = (version: string | null) =>
  call(nodeKey, "POST", `/v1/speakers/${speakerId}/status`, {
    speaker_id: speakerId,
    reason: "live_poll",
    error: null,
    bird: { reachable: version !== null, version, router_id: null, server_time: null, last_reconfiguration: null },
    sessions: [],
    agent_version: "1.0.0",
  });

beforeAll(async () => {
  t = await startTestController();
  const created = (await call(t.rootKey, "POST", "/v1/speakers", { name: "edge-v", router_id: "192.0.2.21", asn: 65021 })).json();
  speakerId = created.id;
  nodeKey = (await call(created.enrollment_token, "POST", "/v1/nodes/enroll", { hostname: "v.example", agent_version: "1.0.0" })).json().api_key;
  const peer = await call(t.rootKey, "POST", "/v1/peers", {
    name: "up",
    neighbor_address: "192.0.2.254",
    remote_asn: 65100,
    password: "pw-of-the-peer",
    address_families: ["ipv4"],
    speaker_ids: [speakerId],
  });
  expect(peer.statusCode, peer.body).toBe(201);
  const mod = (await call(t.rootKey, "POST", "/v1/modules", { name: "ranges", type: "IP_RANGES" })).json();
  await call(t.rootKey, "POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.2.0.0/16" });
  revisionId = (await call(t.rootKey, "POST", `/v1/modules/${mod.id}/refresh?wait=true`)).json().result.revision_id;
}, 60_000);
afterAll(async () => t?.close());

describe("the revision preview's BIRD version", () => {
  it("is null before the speaker reports one, and the render is what every supported version accepts", async () => {
    for (const query of ["", `?speaker_id=${speakerId}`]) {
      const p = await preview(query);
      expect(p.bird_version, query).toBeNull();
      expect(p.bird_config_excerpt, query).not.toContain("authentication md5;");
    }
    expect((await preview(`?speaker_id=${speakerId}`)).bird_config_excerpt).toContain('password "********";');
  });

  it("is the one the speaker last reported, and the password peer renders as that BIRD takes it", async () => {
    for (const [version, authentication] of [
      ["3.1.8", true],
      ["2.0.12", false],
      ["2.17.6", true],
      ["3.0.1", false],
    ] as const) {
      expect((await report(version)).statusCode).toBe(204);
      const p = await preview(`?speaker_id=${speakerId}`);
      expect(p.bird_version).toBe(version);
      expect(p.bird_config_excerpt.includes("authentication md5;"), version).toBe(authentication);
      expect(p.bird_config_excerpt).toContain('password "********";');
    }
    // Without a speaker nothing was reported: the render stays the one every version accepts.
    expect((await preview("")).bird_version).toBeNull();
  });

  it("a report from a BIRD that did not answer leaves no version: the render falls back", async () => {
    expect((await report(null)).statusCode).toBe(204);
    const p = await preview(`?speaker_id=${speakerId}`);
    expect(p.bird_version).toBeNull();
    expect(p.bird_config_excerpt).not.toContain("authentication md5;");
  });
});
