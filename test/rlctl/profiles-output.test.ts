import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { ensureRlctlBuilt, rlctl, rlctlOk, tempHome } from "./run-rlctl.js";

// Profiles in $XDG_CONFIG_HOME/rlctl/config.json (a temporary HOME here), RL_URL / RL_API_KEY
// over them, and the three output formats.

describe("rlctl profiles and output formats", () => {
  let t: LiveController;
  const home = tempHome();
  const configFile = join(home.home, ".config", "rlctl", "config.json");

  beforeAll(async () => {
    ensureRlctlBuilt();
    t = await startLiveController();
    await t.call(t.rootKey, "POST", "/v1/modules", { name: "streaming", type: "IP_RANGES" });
  });

  afterAll(async () => {
    await t?.close();
    home.remove();
  });

  it("config set takes --url and --api-key after the profile name (the program's own --url must not swallow them)", async () => {
    const r = await rlctl(home.home, ["config", "set", "lab", "--url", t.url, "--api-key", t.rootKey]);
    expect(r.stderr).not.toContain("needs --url");
    expect(r.code).toBe(0);
    expect(r.stderr).toBe(`profile lab saved in ${configFile} (current)\n`);
    expect(JSON.parse(readFileSync(configFile, "utf8"))).toEqual({ current: "lab", profiles: { lab: { url: t.url, api_key: t.rootKey } } });
    // It holds a key: readable by its owner only.
    expect(statSync(configFile).mode & 0o777).toBe(0o600);
  });

  it("config set / use / ls / rm, and the current profile is what commands use", async () => {
    await rlctlOk(home.home, ["config", "set", "lab", "--url", t.url, "--api-key", t.rootKey]);
    const other = await rlctlOk(home.home, ["config", "set", "other", "--url", "http://127.0.0.1:9", "--api-key", "rlk_other_key"]);
    expect(other.stderr).toBe(`profile other saved in ${configFile}\n`);

    const listed = await rlctlOk(home.home, ["config", "ls"]);
    const [header, ...rows] = listed.stdout.trimEnd().split("\n");
    expect(header!.split(/\s+/).filter(Boolean)).toEqual(["PROFILE", "URL", "KEY"]);
    expect(rows).toHaveLength(2);
    expect(rows.find((l) => l.includes("lab"))).toMatch(new RegExp(`^\\*\\s+lab\\s+${t.url.replace(/\./g, "\\.")}\\s+rlk_`));
    expect(rows.find((l) => l.includes("other"))).toMatch(/^\s+other\s+http:\/\/127\.0\.0\.1:9\s+rlk_other_…$/);
    expect(listed.stdout).not.toContain(t.rootKey);

    expect((await rlctlOk(home.home, ["modules", "ls"])).stdout).toContain("streaming");

    const used = await rlctlOk(home.home, ["config", "use", "other"]);
    expect(used.stderr).toBe("now using other\n");
    expect(JSON.parse(readFileSync(configFile, "utf8")).current).toBe("other");
    // --profile picks another one for a single command.
    expect((await rlctlOk(home.home, ["--profile", "lab", "modules", "ls"])).stdout).toContain("streaming");
    expect((await rlctlOk(home.home, ["modules", "ls", "--profile", "lab"])).stdout).toContain("streaming");

    await rlctlOk(home.home, ["config", "rm", "other"]);
    const after = await rlctlOk(home.home, ["config", "ls", "-o", "json"]);
    expect(JSON.parse(after.stdout)).toEqual([{ name: "lab", current: false, url: t.url, api_key: expect.stringMatching(/^rlk_.*…$/) }]);

    const gone = await rlctl(home.home, ["--profile", "other", "modules", "ls"]);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toBe(`rlctl: no profile named other in ${configFile} (rlctl config ls)\n`);
    const unknown = await rlctl(home.home, ["config", "use", "nope"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(`rlctl: no profile named nope in ${configFile}\n`);
    await rlctlOk(home.home, ["config", "use", "lab"]);
  });

  it("RL_URL and RL_API_KEY override the profile, and --url / --api-key override them", async () => {
    await rlctlOk(home.home, ["config", "set", "broken", "--url", "http://127.0.0.1:9", "--api-key", "rlk_broken_key"]);
    await rlctlOk(home.home, ["config", "use", "broken"]);

    const byEnv = await rlctl(home.home, ["modules", "ls"], { RL_URL: t.url, RL_API_KEY: t.rootKey });
    expect(byEnv.code).toBe(0);
    expect(byEnv.stdout).toContain("streaming");

    // The profile's URL with the environment's key, and the other way round.
    expect((await rlctl(home.home, ["modules", "ls"], { RL_URL: t.url })).stderr).toMatch(/^rlctl: 401 /);
    expect((await rlctl(home.home, ["modules", "ls"], { RL_API_KEY: t.rootKey })).code).toBe(7);

    const byFlags = await rlctl(home.home, ["modules", "ls", "--url", t.url, "--api-key", t.rootKey], {
      RL_URL: "http://127.0.0.1:9",
      RL_API_KEY: "rlk_wrong",
    });
    expect(byFlags.code).toBe(0);
    expect(byFlags.stdout).toContain("streaming");
    await rlctlOk(home.home, ["config", "use", "lab"]);
  });

  it("prints tables with a header line, -o json as JSON and -o yaml as YAML", async () => {
    const env = { RL_URL: t.url, RL_API_KEY: t.rootKey };
    const table = await rlctlOk(home.home, ["modules", "ls"], env);
    const [header, row] = table.stdout.split("\n");
    expect(header!.split(/\s{2,}/)).toEqual(["ID", "NAME", "TYPE", "ENABLED", "RPKI", "ACTION", "REFRESHED", "ERROR"]);
    expect(row).toMatch(/^[0-9a-f-]{36}\s+streaming\s+IP_RANGES\s+true\s+off\s+announce\s+-\s+-$/);

    const json = JSON.parse((await rlctlOk(home.home, ["-o", "json", "modules", "ls"], env)).stdout);
    expect(json).toEqual([expect.objectContaining({ name: "streaming", type: "IP_RANGES", enabled: true })]);

    const yaml = await rlctlOk(home.home, ["modules", "ls", "-o", "yaml"], env);
    expect(yaml.stdout).toMatch(/^- id: [0-9a-f-]{36}\n/);
    expect(parseYaml(yaml.stdout)).toEqual(json);

    const none = await rlctlOk(home.home, ["jobs", "ls", "--status", "failed"], env);
    expect(none.stdout).toBe("(none)\n");
  });
});
