import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFeedServer } from "../helpers/feeds.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { ensureRlctlBuilt, rlctl, rlctlOk, tempHome } from "./run-rlctl.js";

// rlctl takes AS-SETs beside AS numbers, sets a module's RPKI policy and asks for the RPKI dry
// run (issue 26): RIPEstat's API on a real local HTTP port, an rpki-client VRP document in a file.
describe("rlctl AS-SETs and rpki_policy", () => {
  let t: LiveController;
  let feeds: Awaited<ReturnType<typeof startFeedServer>>;
  const home = tempHome();
  let env: Record<string, string>;

  beforeAll(async () => {
    ensureRlctlBuilt();
    feeds = await startFeedServer();
    feeds.ripestat(13335, ["1.1.1.0/24", "1.0.0.0/24"]); // valid, invalid by length
    const vrps = join(home.home, "vrps.json");
    writeFileSync(
      vrps,
      JSON.stringify({
        metadata: { buildtime: new Date().toISOString() },
        roas: [
          { asn: 13335, prefix: "1.1.1.0/24", maxLength: 24, ta: "apnic" },
          { asn: 13335, prefix: "1.0.0.0/22", maxLength: 22, ta: "apnic" },
        ],
      }),
    );
    t = await startLiveController({
      env: { APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8", ASN_SOURCE: "ripestat", ASN_SOURCE_URL: feeds.base, RPKI_VRP_SOURCE: `file:${vrps}` },
    });
    env = { RL_URL: t.url, RL_API_KEY: t.rootKey };
  });

  afterAll(async () => {
    await t?.close();
    await feeds?.close();
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

  it("refresh --dry-run answers what validation finds and drop_invalid would drop, and makes no revision", async () => {
    await rlctlOk(home.home, ["refresh", "customers"], env);
    const revisions = (await t.call(t.rootKey, "GET", "/v1/revisions?limit=100")).json().items.length;
    const table = (await rlctlOk(home.home, ["refresh", "customers", "--dry-run"], env)).stdout;
    expect(table).toMatch(/MODULE\s+RPKI\s+VALID\s+INVALID\s+NOT FOUND\s+WOULD DROP/);
    expect(table).toMatch(/customers\s+drop_invalid\s+1\s+1\s+0\s+1/);
    expect(table).toContain("invalid 1.0.0.0/24 from AS13335 (customers)");
    const json = JSON.parse((await rlctlOk(home.home, ["refresh", "--dry-run", "-o", "json"], env)).stdout);
    expect(json).toMatchObject({ dry_run: true, rpki: { available: true, vrp_count: 2 } });
    expect(json.modules[0]).toMatchObject({ valid: 1, invalid: 1, not_found: 0, would_drop: 1, invalid_prefixes: [{ prefix: "1.0.0.0/24", origin: 13335 }] });
    expect((await t.call(t.rootKey, "GET", "/v1/revisions?limit=100")).json().items.length).toBe(revisions);
    // lookup names a collected match's origin and its RPKI state.
    const lookup = (await rlctlOk(home.home, ["lookup", "1.0.0.1"], env)).stdout;
    expect(lookup).toMatch(/ORIGIN\s+RPKI/);
    expect(lookup).toMatch(/customers\s+AS_PREFIXES\s+snapshot\s+1\.0\.0\.0\/24\s+(\S+\s+)?13335\s+invalid/);
  });

  it("modules set changes the RPKI policy; a policy it does not know is a usage error", async () => {
    const set = JSON.parse((await rlctlOk(home.home, ["modules", "set", "customers", "--rpki-policy", "report", "-o", "json"], env)).stdout);
    expect(set).toMatchObject({ name: "customers", rpki_policy: "report" });
    expect((await rlctlOk(home.home, ["modules", "ls"], env)).stdout).toMatch(/customers\s+AS_PREFIXES\s+true\s+report/);
    const bad = await rlctl(home.home, ["modules", "set", "customers", "--rpki-policy", "drop"], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--rpki-policy drop: choose off, report or drop_invalid");
    const nothing = await rlctl(home.home, ["modules", "set", "customers"], env);
    expect(nothing.code).toBe(2);
  });
});
