import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumTool, ensureConsoleBuilt, launchChromium } from "../helpers/browser.js";
import { startFeedServer } from "../helpers/feeds.js";
import { startIrrdServer } from "../helpers/irrd-server.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { seriousViolations, signIn, writeShot } from "./console-steps.js";

// Issue 26 in a real browser against a listening controller: a module created through the form
// with an RPKI policy, an AS-SET entry expanded through an IRRd stand-in on a real TCP port,
// member prefixes from RIPEstat's API on a real HTTP port, and an rpki-client VRP document
// written to a file. The module page's dry run and the lookup page show the RFC 6811 states.

const missing = chromiumTool().available ? [] : ["chromium"];
const title = "console: AS-SET entries and RPKI origin validation (module form, module page, lookup)";

describe.skipIf(missing.length > 0)(missing.length > 0 ? `${title} (skipped: chromium not on PATH)` : title, () => {
  let t: LiveController;
  let feeds: Awaited<ReturnType<typeof startFeedServer>>;
  let irrd: Awaited<ReturnType<typeof startIrrdServer>>;
  let browser: Browser;
  let page: Page;
  let moduleId = "";
  const dir = mkdtempSync(join(tmpdir(), "rl-console-rpki-"));

  const api = async (method: "GET" | "POST" | "PATCH", url: string, payload?: object) => {
    const res = await t.call(t.rootKey, method, url, payload);
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const text = (selector: string) => page.locator(selector).first().innerText();
  const lookup = async (q: string) => {
    await page.goto(`${t.url}/console/lookup`);
    await page.fill("input[name=q]", q);
    await page.keyboard.press("Enter");
    await page.locator("[data-testid=lookup]").waitFor();
    return text("[data-testid=lookup]");
  };

  beforeAll(async () => {
    ensureConsoleBuilt();
    feeds = await startFeedServer();
    // AS-CUSTOMERS holds AS64500 and, through a nested set, AS64501.
    irrd = await startIrrdServer({ sets: { RADB: { "AS-CUSTOMERS": ["AS64500", "AS-DOWNSTREAM"], "AS-DOWNSTREAM": ["AS64501"] } } });
    feeds.ripestat(64500, ["11.10.0.0/24"]); // valid
    feeds.ripestat(64501, ["11.20.0.0/24", "11.30.0.0/24", "11.40.0.0/24"]); // invalid by origin, invalid by length, not found
    const vrps = join(dir, "vrps.json");
    writeFileSync(
      vrps,
      JSON.stringify({
        metadata: { buildtime: new Date().toISOString(), roas: 3 },
        roas: [
          { asn: 64500, prefix: "11.10.0.0/16", maxLength: 24, ta: "test" },
          { asn: 64502, prefix: "11.20.0.0/16", maxLength: 24, ta: "test" },
          { asn: 64501, prefix: "11.30.0.0/16", maxLength: 16, ta: "test" },
        ],
      }),
    );
    t = await startLiveController({
      env: {
        APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8",
        ASN_SOURCE: "ripestat",
        ASN_SOURCE_URL: feeds.base,
        IRR_SOURCE: irrd.url,
        IRR_SOURCES: "RADB",
        RPKI_VRP_SOURCE: `file:${vrps}`,
      },
    });
    await api("POST", "/v1/communities", { community: "65000:26", title: "customers" });
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    await page.goto(`${t.url}/console/modules`);
    await signIn(page, t.rootKey);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await feeds?.close();
    await irrd?.close();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("creates an AS module with an RPKI policy through the form, which offers the policy for AS modules only", async () => {
    await page.fill("input[name=module-name]", "customers");
    await page.selectOption("select[name=module-type]", "IP_RANGES");
    expect(await page.locator("select[name=module-rpki-policy]").count()).toBe(0);
    await page.selectOption("select[name=module-type]", "AS_PREFIXES");
    await page.selectOption("select[name=module-rpki-policy]", "drop_invalid");
    await page.selectOption("select[name=module-community]", { label: "65000:26 customers" });
    await page.click("button:has-text('Create module')");
    await page.waitForURL(/\/console\/modules\/[0-9a-f-]{36}$/);
    moduleId = page.url().split("/").pop() ?? "";
    expect(await page.inputValue("select[aria-label='RPKI policy']")).toBe("drop_invalid");
    expect(await api("GET", `/v1/modules/${moduleId}`)).toMatchObject({ name: "customers", type: "AS_PREFIXES", rpki_policy: "drop_invalid" });
  }, 60_000);

  it("adds an AS-SET entry, stored as the set's name", async () => {
    await page.fill("input[name=entry-value]", "as-customers");
    await page.click("button:has-text('Add entry')");
    await page.locator("[data-testid=entries] td:text-is('AS-CUSTOMERS')").waitFor();
    expect((await api("GET", `/v1/modules/${moduleId}/as-entries`)).items).toEqual([expect.objectContaining({ asn: null, as_set: "AS-CUSTOMERS" })]);
  }, 60_000);

  it("after a refresh, the module page's dry run counts the states and names the invalid prefixes with origin and set", async () => {
    await page.goto(`${t.url}/console/refresh`);
    await page.click("[data-testid=refresh]");
    await page.waitForURL(/\/console\/revisions\/0\/diff\/1$/, { timeout: 30_000 });
    await page.locator("[data-testid=diff-added-count]").waitFor();
    // drop_invalid: the valid and the not-found prefixes are announced, the invalid ones are not.
    expect(await text("[data-testid=diff-added-count]")).toBe("2");
    const added = await text("[data-testid=diff-added]");
    expect(added).toContain("11.10.0.0/24");
    expect(added).toContain("11.40.0.0/24");
    expect(added).not.toContain("11.20.0.0/24");

    await page.goto(`${t.url}/console/modules/${moduleId}`);
    await page.click("[data-testid=rpki-check]");
    await page.locator("[data-testid=rpki-report]").waitFor();
    expect(await text("[data-testid=rpki-counts]")).toBe("1 valid, 2 invalid, 1 not found");
    expect(await text("[data-testid=rpki-would-drop]")).toBe("2");
    const rows = (await page.locator("[data-testid=rpki-invalid] tbody tr").allInnerTexts()).map((r) => r.replace(/\s+/g, " ").trim()).sort();
    expect(rows).toEqual(["11.20.0.0/24 AS64501 AS-CUSTOMERS", "11.30.0.0/24 AS64501 AS-CUSTOMERS"]);
    expect(await seriousViolations(page)).toEqual([]);
    await writeShot(page, "module-rpki");
  }, 90_000);

  it("lookup shows an AS-SET member's prefix with its origin, the set and its RPKI state", async () => {
    const invalid = await lookup("11.20.0.1");
    expect(invalid).toMatch(/customers .*asn 11\.20\.0\.0\/24 from 64501 via AS-CUSTOMERS RPKI invalid/);
    expect(await text("[data-testid=lookup-revision]")).toContain("not announced");
    const valid = await lookup("11.10.0.1");
    expect(valid).toMatch(/asn 11\.10\.0\.0\/24 from 64500 via AS-CUSTOMERS RPKI valid/);
    expect(await text("[data-testid=lookup-revision]")).toMatch(/1: 11\.10\.0\.0\/24 65000:26/);
    expect(await lookup("11.40.0.1")).toMatch(/from 64501 via AS-CUSTOMERS RPKI not found/);
    expect(await seriousViolations(page)).toEqual([]);
  }, 90_000);

  it("changes the policy on the module page; the modules list shows it", async () => {
    await page.goto(`${t.url}/console/modules/${moduleId}`);
    await page.selectOption("select[aria-label='RPKI policy']", "report");
    await expect.poll(async () => (await api("GET", `/v1/modules/${moduleId}`)).rpki_policy).toBe("report");
    await page.goto(`${t.url}/console/modules`);
    await expect.poll(() => text("[data-testid=modules] tbody")).toMatch(/customers\s+AS_PREFIXES\s+report/);
  }, 60_000);
});
