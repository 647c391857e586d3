import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { ensureRlctlBuilt, rlctl, rlctlOk, tempHome } from "./run-rlctl.js";

// rlctl makes COUNTRY modules with their country entries, exclude modules, and sets a module's
// stale budget (issue 27).
describe("rlctl countries, exclusions and max stale hours", () => {
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

  it("adds a COUNTRY module with --max-stale-hours, and its countries through entries add, ls and rm", async () => {
    const created = await rlctlOk(home.home, ["modules", "add", "nl", "--type", "country", "--max-stale-hours", "72", "-o", "json"], env);
    expect(JSON.parse(created.stdout)).toMatchObject({ name: "nl", type: "COUNTRY", action: "announce", max_stale_hours: 72 });
    await rlctlOk(home.home, ["entries", "add", "nl", "nl", "BE"], env);
    const listed = JSON.parse((await rlctlOk(home.home, ["entries", "ls", "nl", "-o", "json"], env)).stdout) as { country: string }[];
    expect(listed.map((e) => e.country).sort()).toEqual(["BE", "NL"]);
    await rlctlOk(home.home, ["entries", "rm", "nl", "BE"], env);
    expect((await rlctlOk(home.home, ["entries", "ls", "nl"], env)).stdout).not.toMatch(/\bBE\b/);
  });

  it("adds an exclude module whose records are kept forever; a wrong action or budget is a usage error", async () => {
    const created = await rlctlOk(
      home.home,
      ["modules", "add", "bank", "--type", "ip", "--action", "exclude", "--max-stale-hours", "forever", "-o", "json"],
      env,
    );
    expect(JSON.parse(created.stdout)).toMatchObject({ action: "exclude", max_stale_hours: null });
    expect((await rlctlOk(home.home, ["modules", "ls"], env)).stdout).toMatch(/exclude/);
    const badAction = await rlctl(home.home, ["modules", "add", "x", "--type", "ip", "--action", "drop"], env);
    expect(badAction.code).toBe(2);
    expect(badAction.stderr).toMatch(/choose announce or exclude/);
    const badHours = await rlctl(home.home, ["modules", "add", "y", "--type", "ip", "--max-stale-hours", "0"], env);
    expect(badHours.code).toBe(2);
    expect(badHours.stderr).toMatch(/--max-stale-hours 0/);
  });
});
