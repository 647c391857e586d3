import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { ensureRlctlBuilt, rlctlOk, tempHome } from "./run-rlctl.js";

// rlctl takes AS-SETs beside AS numbers and sets a module's RPKI policy (issue 26).
describe("rlctl AS-SETs and rpki_policy", () => {
  let t: LiveController;
  const home = tempHome();
  let env: Record<string, string>;

  beforeAll(async () => {
    ensureRlctlBuilt();
    t = await startLiveController();
    env = { RL_URL: t.url, RL_API_KEY: t.rootKey };
  });

  afterAll(async () => {
    await t?.close();
    home.remove();
  });

  it("creates a module with --rpki-policy, adds an ASN and AS-SETs, and lists them by name", async () => {
    const created = await rlctlOk(home.home, ["modules", "add", "customers", "--type", "as", "--rpki-policy", "drop_invalid", "-o", "json"], env);
    expect(JSON.parse(created.stdout)).toMatchObject({ name: "customers", rpki_policy: "drop_invalid" });
    await rlctlOk(home.home, ["entries", "add", "customers", "AS13335", "AS-EXAMPLE", "RIPE::AS-CUSTOMERS"], env);
    const listed = JSON.parse((await rlctlOk(home.home, ["entries", "ls", "customers", "-o", "json"], env)).stdout) as {
      asn: number | null;
      as_set: string | null;
    }[];
    expect(listed.map((e) => e.asn ?? e.as_set).sort()).toEqual([13335, "AS-EXAMPLE", "RIPE::AS-CUSTOMERS"].sort());
    const table = (await rlctlOk(home.home, ["modules", "ls"], env)).stdout;
    expect(table).toMatch(/RPKI/);
    expect(table).toMatch(/drop_invalid/);
  });
});
