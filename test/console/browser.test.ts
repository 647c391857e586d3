import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumTool, ensureConsoleBuilt, launchChromium } from "../helpers/browser.js";
import { type ConsoleLab, startConsoleLab } from "../helpers/console-lab.js";
import { startFeedServer } from "../helpers/feeds.js";
import { tool } from "../helpers/tools.js";

// The console in a real browser (Debian's Chromium through playwright-core) against a real
// controller, rl-agent, BIRD and GoBGP on loopback: what an operator clicks, and what a viewer
// is not offered.

const root = join(import.meta.dirname, "../..");
const shots = join(root, ".test-output/console");
const missing = [...["bird", "birdc", "gobgpd", "gobgp"].filter((bin) => !tool(bin).available), ...(chromiumTool().available ? [] : ["chromium"])];
const title = "console: sign in, modules, refresh and diff, lookup, apply to BIRD + GoBGP, viewer";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

describe.skipIf(missing.length > 0)(missing.length > 0 ? `${title} (skipped: ${missing.join(", ")} not on PATH)` : title, () => {
  let lab: ConsoleLab;
  let feeds: Awaited<ReturnType<typeof startFeedServer>>;
  let browser: Browser;
  let page: Page;
  let moduleId = "";
  const policyErrors: string[] = [];

  async function open(key: string | null = null): Promise<Page> {
    const context = await browser.newContext({ viewport: SIZES.desktop });
    const p = await context.newPage();
    p.on("console", (m) => {
      if (m.type() === "error" && /Content Security Policy/i.test(m.text())) policyErrors.push(m.text());
    });
    if (key) {
      await p.goto(`${lab.t.url}/console/`);
      await signIn(p, key);
    }
    return p;
  }

  async function signIn(p: Page, key: string) {
    await p.fill("#api-key", key);
    await p.click("button[type=submit]");
    await p.waitForSelector("[data-testid=role]");
  }

  const go = async (label: string) => {
    const menu = page.locator("button.menu");
    if (await menu.isVisible()) await menu.click();
    await page.click(`nav >> text=${label}`);
  };
  const text = (selector: string) => page.locator(selector).first().innerText();

  beforeAll(async () => {
    ensureConsoleBuilt();
    mkdirSync(shots, { recursive: true });
    feeds = await startFeedServer();
    feeds.text("/cdn.txt", ["203.0.113.0/24", "2001:db8:10::/48", "not-a-prefix"]);
    // The feed server is on loopback, which outbound fetches refuse unless allowed.
    lab = await startConsoleLab({ NATS_URL: natsUrl, APP_OUTBOUND_ALLOW_CIDRS: "127.0.0.0/8" });
    browser = await launchChromium();
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await lab?.close();
    await feeds?.close();
  }, 60_000);

  it("signs in with a key, loads under 150 KB of gzipped JavaScript, and keeps the key in sessionStorage only", async () => {
    page = await open();
    const started = performance.now();
    await page.goto(`${lab.t.url}/`);
    await page.waitForSelector("#api-key");
    const toSignIn = performance.now() - started;
    await page.screenshot({ path: join(shots, "sign-in-desktop.png") });
    await signIn(page, lab.t.rootKey);
    await page.waitForSelector("[data-testid=modules]");
    // Every script the first load fetched, as the browser's resource timing lists them, gzipped here.
    const scripts = await page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .map((e) => e.name)
        .filter((n) => /\.js(\?|$)/.test(n)),
    );
    let jsGzip = 0;
    for (const url of scripts) jsGzip += gzipSync(Buffer.from(await (await fetch(url)).arrayBuffer())).length;

    // A signed-in reload until the modules list is drawn, three times (the first warms the caches).
    const reloads: number[] = [];
    for (let i = 0; i < 3; i++) {
      const reloadStarted = performance.now();
      await page.reload();
      await page.waitForSelector("[data-testid=modules][data-loaded]", { state: "attached" });
      reloads.push(performance.now() - reloadStarted);
    }
    const api = await page.evaluate(() =>
      performance
        .getEntriesByType("resource")
        .filter((e) => e.name.includes("/v1/"))
        .map((e) => `${new URL(e.name).pathname} ${e.duration.toFixed(0)} ms`),
    );
    console.log(`[console] first load JavaScript: ${(jsGzip / 1024).toFixed(1)} KB gzip in ${scripts.length} file(s)`);
    console.log(`[console] cold load to the sign-in form: ${toSignIn.toFixed(0)} ms`);
    console.log(
      `[console] signed-in reload to the modules page: ${reloads.map((ms) => `${ms.toFixed(0)} ms`).join(", ")} (API calls of the last: ${api.join(", ")})`,
    );
    expect(scripts.length).toBeGreaterThan(0);
    expect(jsGzip).toBeLessThan(150 * 1024);

    expect(await page.evaluate(() => sessionStorage.getItem("rlc.apiKey"))).toBe(lab.t.rootKey);
    expect(await page.evaluate(() => localStorage.getItem("rlc.apiKey"))).toBeNull();
    expect(await page.context().cookies()).toEqual([]);
    expect(page.url()).not.toContain(lab.t.rootKey.slice(4, 12));
    expect(await text("[data-testid=role]")).toContain("superadmin");
  }, 90_000);

  it("creates a community and a module, adds, edits and deletes entries, and imports CSV after a dry run", async () => {
    await page.fill("input[name=community]", "65000:100");
    await page.fill("input[name=community-title]", "via-vpn");
    await page.click("button:has-text('Add community')");
    await page.waitForSelector("select[name=module-community] option:has-text('65000:100 via-vpn')", { state: "attached" });
    await page.fill("input[name=module-name]", "vpn");
    await page.selectOption("select[name=module-type]", "IP_RANGES");
    await page.selectOption("select[name=module-community]", { label: "65000:100 via-vpn" });
    await page.click("button:has-text('Create module')");
    await page.waitForURL(/\/console\/modules\/[0-9a-f-]{36}$/);
    moduleId = page.url().split("/").pop() ?? "";

    const rows = page.locator("[data-testid=entries] tbody tr");
    for (const cidr of ["11.1.0.0/16", "2a00:1::/32", "11.2.0.0/16"]) {
      await page.fill("input[name=entry-value]", cidr);
      await page.click("button:has-text('Add entry')");
      await page.locator(`[data-testid=entries] td:text-is("${cidr}")`).waitFor();
    }
    await expect.poll(() => rows.count()).toBe(3);

    const row = page.locator("[data-testid=entries] tr", { hasText: "11.2.0.0/16" });
    await row.locator("button:has-text('Edit')").click();
    await page.locator("[data-testid=entries] input[aria-label=Comment]").fill("edited in the console");
    await page.click("[data-testid=entries] button:has-text('Save')");
    await page.locator("[data-testid=entries] td:text-is('edited in the console')").waitFor();
    await page.locator("[data-testid=entries] tr", { hasText: "11.2.0.0/16" }).locator("button:has-text('Delete')").click();
    await expect.poll(() => rows.count()).toBe(2);

    await page.click("summary:has-text('Import CSV')");
    await page.fill("textarea[name=csv]", "cidr,comment\n11.3.0.0/16,from csv\n2a00:5::/32,from csv\n");
    await page.click("button:has-text('Dry run')");
    await expect.poll(() => text("[data-testid=csv-result]")).toContain("2 created");
    expect(await rows.count()).toBe(2);
    await page.click("button:has-text('Commit import')");
    await expect.poll(() => text("[data-testid=csv-result]")).toContain("Imported: 2 created");
    await expect.poll(() => rows.count()).toBe(4);
    const listed = (await lab.ok("GET", `/v1/modules/${moduleId}/ip-range-entries?limit=50`)).items.map((e: any) => e.cidr).sort();
    expect(listed).toEqual(["11.1.0.0/16", "11.3.0.0/16", "2a00:1::/32", "2a00:5::/32"]);
  }, 90_000);

  it("refreshes with progress and opens the diff with the right counts per family; the filter narrows it", async () => {
    await go("Refresh");
    await page.click("[data-testid=refresh]");
    await page.waitForURL(/\/console\/revisions\/0\/diff\/1$/, { timeout: 30_000 });
    await page.locator("[data-testid=diff-added-count]").waitFor();
    expect(await text("[data-testid=diff-added-count]")).toBe("4");
    expect(await text("[data-testid=diff-added-v4]")).toBe("2");
    expect(await text("[data-testid=diff-added-v6]")).toBe("2");
    expect(await text("[data-testid=diff-removed-count]")).toBe("0");
    expect(await text("[data-testid=diff-added]")).toContain("65000:100 — 4");
    await page.fill("input[name=diff-filter]", "2a00");
    await expect.poll(() => text("[data-testid=diff-added-v4]")).toBe("0");
    expect(await text("[data-testid=diff-added-v6]")).toBe("2");
  }, 90_000);

  it("a refresh that would withdraw too much shows the guard's verdict, and the operator forces it", async () => {
    await lab.ok("PATCH", "/v1/settings", { revision_guard_max_drop_percent: 10 });
    const entries = (await lab.ok("GET", `/v1/modules/${moduleId}/ip-range-entries?limit=50`)).items;
    await lab.ok("DELETE", `/v1/modules/${moduleId}/ip-range-entries/${entries.find((e: any) => e.cidr === "11.3.0.0/16").id}`);
    await go("Refresh");
    await page.click("[data-testid=refresh]");
    await page.locator("[data-testid=guard]").waitFor({ timeout: 30_000 });
    expect(await text("[data-testid=guard]")).toMatch(/withdraw 1 of the current revision's 4 prefixes/);
    await page.click("[data-testid=guard] button:has-text('Force the refresh')");
    await page.waitForURL(/\/console\/revisions\/1\/diff\/2$/, { timeout: 30_000 });
    await page.locator("[data-testid=diff-removed-count]").waitFor();
    expect(await text("[data-testid=diff-removed-count]")).toBe("1");
    expect(await text("[data-testid=diff-removed]")).toContain("11.3.0.0/16");
    expect(await text("[data-testid=diff-added-count]")).toBe("0");
  }, 90_000);

  it("rolls back to the first revision from the history, which opens the diff that restores the withdrawn prefix", async () => {
    await go("Revisions");
    const first = page.locator("[data-testid=revisions] tr[data-revision='1']");
    expect(await first.innerText()).toMatch(/ingest/);
    await first.locator("button:text-is('Roll back')").click();
    await page.waitForURL(/\/console\/revisions\/2\/diff\/3$/, { timeout: 30_000 });
    await page.locator("[data-testid=diff-added-count]").waitFor();
    expect(await text("[data-testid=diff-added-count]")).toBe("1");
    expect(await text("[data-testid=diff-added]")).toContain("11.3.0.0/16");
    await go("Revisions");
    await expect.poll(() => text("[data-testid=revisions] tbody tr")).toMatch(/^3\s+current[\s\S]*rollback of #1/);
  }, 90_000);

  it("filters jobs by type and the audit journal by resource", async () => {
    await go("Jobs");
    await page.selectOption(".filters select >> nth=0", "module_ingest");
    await expect
      .poll(async () => [...new Set((await page.locator("[data-testid=jobs] tbody tr td:first-child").allInnerTexts()).map((x) => x.trim()))])
      .toEqual(["module_ingest"]);
    await go("Audit");
    await page.selectOption(".filters select >> nth=2", "community");
    await expect
      .poll(async () => [...new Set((await page.locator("[data-testid=audit] tbody tr td:nth-child(4)").allInnerTexts()).map((x) => x.trim()))])
      .toEqual(["community"]);
    expect(await text("[data-testid=audit] tbody")).toContain("65000:100");
  }, 90_000);

  it("looks up an address: its entry, and the revision's prefix with its community", async () => {
    await go("Lookup");
    await page.fill("input[name=q]", "11.1.2.3");
    await page.keyboard.press("Enter");
    await page.locator("[data-testid=lookup]").waitFor();
    const tree = await text("[data-testid=lookup]");
    expect(tree).toContain("in the lists");
    expect(tree).toMatch(/vpn.*entry 11\.1\.0\.0\/16/);
    expect(await text("[data-testid=lookup-revision]")).toMatch(/3: 11\.1\.0\.0\/16 65000:100/);
    expect(await text("[data-testid=lookup-answer]")).toMatch(/^announced as 11\.1\.0\.0\/16 with 65000:100 — from modules? (.*, )?vpn\b/);
  }, 90_000);

  it("previews a CDN feed before adding it as a source of the module", async () => {
    await page.goto(`${lab.t.url}/console/modules/${moduleId}`);
    await page.fill("input[aria-label='Feed URL']", `${feeds.base}/cdn.txt`);
    await page.click("button:has-text('Preview feed')");
    await page.locator("[data-testid=cdn-preview]").waitFor();
    const preview = await text("[data-testid=cdn-preview]");
    expect(preview).toContain("1 IPv4, 1 IPv6, 1 rejected");
    expect(preview).toContain("203.0.113.0/24");
    await page.click("button:has-text('Add source')");
    await page.locator("section[aria-label='CDN sources'] td", { hasText: "/cdn.txt" }).waitFor();
    expect((await lab.ok("GET", `/v1/modules/${moduleId}/cdn-sources`)).items.map((x: any) => x.url)).toEqual([`${feeds.base}/cdn.txt`]);
  }, 90_000);

  it("applies to the speaker with per-speaker progress, then its BGP session to GoBGP turns Established", async () => {
    await go("Routers");
    await page.locator("[data-testid=speakers] td", { hasText: "edge-lab" }).waitFor();
    await page.click("[data-testid=apply]");
    await expect.poll(() => text("[data-testid=apply-progress]"), { timeout: 70_000 }).toBe("applied");
    await expect.poll(() => page.locator("[data-testid=job]").getAttribute("data-status"), { timeout: 10_000 }).toBe("succeeded");
    await expect.poll(() => text("[data-testid=speakers]"), { timeout: 10_000 }).toMatch(/in_sync/);
    await page.click("[data-testid=speakers] a:has-text('edge-lab')");
    await expect.poll(() => page.locator("[data-testid=bgp-state]").allInnerTexts(), { timeout: 45_000, interval: 500 }).toContain("Established");
    expect(await text("[data-testid=sessions]")).toContain("127.0.0.2");
  }, 120_000);

  it("a viewer signs in by keyboard alone and is offered no edit, refresh, apply or settings button", async () => {
    const viewer = await open();
    await viewer.goto(`${lab.t.url}/console/modules`);
    await viewer.waitForSelector("#api-key");
    await viewer.keyboard.press("Tab");
    expect(await viewer.evaluate(() => document.activeElement?.id)).toBe("api-key");
    await viewer.keyboard.type(lab.viewerKey);
    await viewer.keyboard.press("Enter");
    await viewer.waitForSelector("[data-testid=modules] tbody tr");
    expect(await viewer.locator("[data-testid=role]").innerText()).toContain("viewer");
    expect(await viewer.locator("form[aria-label='New module'], form[aria-label='New community']").count()).toBe(0);
    await viewer.goto(`${lab.t.url}/console/modules/${moduleId}`);
    await viewer.locator("[data-testid=entries] tbody tr").first().waitFor();
    expect(
      await viewer
        .locator("button:has-text('Edit'), button:has-text('Delete'), button:has-text('Add entry'), button:has-text('Preview'), summary:has-text('Import CSV')")
        .count(),
    ).toBe(0);
    for (const [path, selector] of [
      ["/console/refresh", "[data-testid=refresh]"],
      ["/console/routers", "[data-testid=apply]"],
      ["/console/settings", "button:has-text('Save settings')"],
      ["/console/revisions", "button:has-text('Roll back')"],
    ] as const) {
      await viewer.goto(lab.t.url + path);
      await viewer.locator("h1").waitFor();
      await viewer.waitForLoadState("networkidle");
      expect(await viewer.locator(selector).count(), path).toBe(0);
    }
    await viewer.goto(`${lab.t.url}/console/settings`);
    await viewer.locator("text=Read-only").waitFor();
    await viewer.context().close();
  }, 90_000);

  it("every page at 1280×800 and 390×844 fits the width (tables scroll inside) and is written as a screenshot", async () => {
    const revisionPages = [
      "/console/modules",
      `/console/modules/${moduleId}`,
      "/console/refresh",
      "/console/revisions/0/diff/1",
      "/console/revisions/1/diff/2",
      "/console/revisions",
    ];
    const pages = [
      ...revisionPages,
      "/console/routers",
      `/console/routers/${lab.speakerId}`,
      "/console/lookup",
      "/console/jobs",
      "/console/audit",
      "/console/settings",
    ];
    for (const [size, viewport] of Object.entries(SIZES)) {
      await page.setViewportSize(viewport);
      for (const path of pages) {
        await page.goto(lab.t.url + path);
        await page.locator("h1").waitFor();
        await page.waitForLoadState("networkidle").catch(() => undefined);
        if (path === "/console/lookup") {
          await page.fill("input[name=q]", "2a00:1::1");
          await page.keyboard.press("Enter");
          await page.locator("[data-testid=lookup]").waitFor();
        }
        if (path.startsWith("/console/routers/")) await page.locator("[data-testid=bgp-state]").first().waitFor({ timeout: 20_000 });
        const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
        expect(overflow, `${path} at ${size}`).toBeLessThanOrEqual(0);
        const name = path
          .replace(/^\/console\//, "")
          .replace(/[0-9a-f-]{36}/, "one")
          .replaceAll("/", "-");
        await page.screenshot({ path: join(shots, `${name}-${size}.png`) });
      }
    }
    await page.click("button[aria-label^='Switch to']");
    await page.screenshot({ path: join(shots, "settings-other-theme-phone.png") });
    expect(policyErrors).toEqual([]);
  }, 180_000);
});
