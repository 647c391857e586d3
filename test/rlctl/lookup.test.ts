import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { ensureRlctlBuilt, rlctlOk, tempHome } from "./run-rlctl.js";

// `rlctl lookup` answers in one line whether an address is announced, and why not.
describe("rlctl lookup", () => {
  let t: LiveController;
  const home = tempHome();
  let env: Record<string, string>;

  beforeAll(async () => {
    ensureRlctlBuilt();
    t = await startLiveController();
    env = { RL_URL: t.url, RL_API_KEY: t.rootKey };
    const post = async (url: string, payload: object) => (await t.call(t.rootKey, "POST", url, payload)).json() as { id: string };
    const community = await post("/v1/communities", { community: "65000:100", title: "vpn" });
    const vpn = await post("/v1/modules", { name: "vpn", type: "IP_RANGES", community_id: community.id });
    const bank = await post("/v1/modules", { name: "bank", type: "IP_RANGES", action: "exclude" });
    await t.call(t.rootKey, "POST", `/v1/modules/${vpn.id}/ip-range-entries`, { cidr: "11.0.0.0/16" });
    await t.call(t.rootKey, "POST", `/v1/modules/${bank.id}/ip-range-entries`, { cidr: "11.0.128.0/17" });
    await t.call(t.rootKey, "POST", "/v1/modules/refresh?wait=true", {});
  });

  afterAll(async () => {
    await t?.close();
    home.remove();
  });

  it("prints the one-line answer: announced as which prefix with which communities, or what cut it out", async () => {
    const announced = await rlctlOk(home.home, ["lookup", "11.0.1.1"], env);
    expect(announced.stdout.split("\n")[1]).toBe("announced as 11.0.0.0/17 with 65000:100 — from module vpn");
    const cut = await rlctlOk(home.home, ["lookup", "11.0.200.1"], env);
    expect(cut.stdout.split("\n")[1]).toBe("not announced: excluded by module bank");
  });
});
