import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromiumTool, ensureConsoleBuilt, launchChromium } from "../helpers/browser.js";
import { type LiveController, startLiveController } from "../helpers/live-controller.js";
import { keyboardPass, seriousViolations, signIn, writeShot } from "./console-steps.js";

// The console's management pages in a real browser against a listening controller: API keys
// (secret shown once, rotate, revoke, last used), communities, DoH profiles, maintenance
// policies with a dry run, signing keys (admin), tenants (tenant default's superadmins); what
// each role is offered; every form by keyboard alone; axe-core on every page.

const missing = chromiumTool().available ? [] : ["chromium"];
const title = "console: API keys, communities, DoH profiles, maintenance, signing keys, roles, keyboard and axe";

describe.skipIf(missing.length > 0)(missing.length > 0 ? `${title} (skipped: chromium not on PATH)` : title, () => {
  let t: LiveController;
  let browser: Browser;
  let page: Page;
  const keys: Record<string, string> = {};

  const api = async (key: string, method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) => {
    const res = await t.call(key, method, url, payload);
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.statusCode === 204 ? null : res.json();
  };
  const text = (selector: string) => page.locator(selector).first().innerText();
  async function open(key: string, path: string): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: t.url });
    const p = await context.newPage();
    await p.goto(`${t.url}/console${path}`);
    await signIn(p, key);
    return p;
  }

  beforeAll(async () => {
    ensureConsoleBuilt();
    t = await startLiveController();
    for (const role of ["viewer", "operator", "admin"]) keys[role] = (await api(t.rootKey, "POST", "/v1/api-keys", { name: `console ${role}`, role })).secret;
    browser = await launchChromium();
    page = await open(t.rootKey, "/api-keys");
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  }, 60_000);

  it("creates an API key: the secret is shown once and copied, the key works and its last use shows; rotating it kills the old secret; revoking ends it", async () => {
    await page.fill("#new-key-name", "ci deploy");
    await page.selectOption("select[name=role]", "operator");
    await page.click("button:text-is('Create key')");
    await page.locator("[data-testid=secret]").waitFor();
    const secret = await page.inputValue("[data-testid=secret-value]");
    await page.click("[data-testid=copy-secret]");
    await page.locator("[data-testid=secret] [role=status]", { hasText: "Copied." }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await writeShot(page, "api-keys-secret");
    await page.click("button:text-is('I have copied it')");
    expect(await page.locator("[data-testid=secret]").count()).toBe(0);
    expect(await page.content()).not.toContain(secret);

    const row = () => page.locator("[data-testid=api-keys] tr[data-key='ci deploy']");
    expect(await row().locator("[data-testid=key-last-used]").innerText()).toBe("never");
    expect((await api(secret, "GET", "/v1/auth/session")).role).toBe("operator");
    await page.reload();
    await expect.poll(() => row().locator("[data-testid=key-last-used]").innerText(), { timeout: 15_000 }).toMatch(/s ago/);

    await row().locator("button:text-is('Rotate')").click();
    await page.click("button:text-is('Yes, rotate')");
    await page.locator("[data-testid=secret]").waitFor();
    const rotated = await page.inputValue("[data-testid=secret-value]");
    expect(rotated).not.toBe(secret);
    expect((await t.call(secret, "GET", "/v1/auth/session")).statusCode).toBe(401);
    expect((await api(rotated, "GET", "/v1/auth/session")).role).toBe("operator");
    await page.click("button:text-is('I have copied it')");

    await row().locator("button:text-is('Revoke')").click();
    await page.click("button:text-is('Yes, revoke')");
    await expect.poll(() => row().innerText(), { timeout: 15_000 }).toContain("revoked");
    expect((await t.call(rotated, "GET", "/v1/auth/session")).statusCode).toBe(401);
  }, 90_000);

  it("communities and DoH profiles: created, edited, deleted; the API's refusal shows in the form", async () => {
    await page.click("nav >> text=Communities");
    await page.fill("#new-community-community", "65000:100");
    await page.fill("#new-community-title", "via-vpn");
    await page.click("button:text-is('Create community')");
    await page.locator("[data-testid=communities] td", { hasText: "65000:100" }).waitFor();
    // The same community again: the API's 409 shows in the form.
    await page.click("button:text-is('Create community')");
    await page.locator("form[aria-label='New community'] [role=alert]").waitFor();
    const row = page.locator("[data-testid=communities] tr", { hasText: "65000:100" });
    await row.locator("button:text-is('Edit')").click();
    await page.fill("[aria-label^='Edit community'] input[name=title]", "via-tunnel");
    await page.click("button:text-is('Save community')");
    await expect.poll(() => text("[data-testid=communities]"), { timeout: 15_000 }).toContain("via-tunnel");
    expect((await api(t.rootKey, "GET", "/v1/communities")).items.map((c: any) => c.title)).toEqual(["via-tunnel"]);

    await page.click("nav >> text=DoH");
    await page.fill("#new-doh-name", "quad9");
    await page.fill("#new-doh-url", "http://dns.example/dns-query");
    await page.click("button:text-is('Create profile')");
    // Plain http to a name: the API refuses it and says why beside the URL (or above the button).
    await page.locator("form[aria-label='New DoH profile'] [role=alert]").waitFor();
    expect((await api(t.rootKey, "GET", "/v1/doh-profiles")).items).toEqual([]);
    await page.fill("#new-doh-url", "https://dns.quad9.net/dns-query");
    await page.click("button:text-is('Create profile')");
    await page.locator("[data-testid=doh-profiles] td:text-is('quad9')").waitFor();
    await page.locator("[data-testid=doh-profiles] tr", { hasText: "quad9" }).locator("button:text-is('Delete')").click();
    await page.click("button:text-is('Yes, delete')");
    await expect.poll(async () => (await api(t.rootKey, "GET", "/v1/doh-profiles")).items.length, { timeout: 15_000 }).toBe(0);
  }, 60_000);

  it("a maintenance policy's dry run shows what the API says a run would delete", async () => {
    await page.click("nav >> text=Maintenance");
    await page.fill("#new-policy-name", "nightly");
    await page.check("label:has-text('Delete finished jobs') >> input");
    await page.click("button:text-is('Create policy')");
    await page.locator("[data-testid=policies] td", { hasText: "nightly" }).waitFor();
    const policy = (await api(t.rootKey, "GET", "/v1/maintenance/policies")).items[0];
    expect(policy.actions.map((a: any) => a.type)).toEqual(["revision_prune", "jobs_retention"]);
    await page.click("[data-testid=policies] button:text-is('Dry run')");
    await page.locator("[data-testid=dry-run]").waitFor();
    const dry = await api(t.rootKey, "POST", `/v1/maintenance/policies/${policy.policy_id}/dry-run`, {});
    const shown = await text("[data-testid=dry-run]");
    for (const a of dry.actions) expect(shown).toContain(`${a.type}: would delete ${a.would.count}`);
  }, 60_000);

  it("signing keys: an admin rotates (asked once), the old key is retired; an operator is offered no rotation", async () => {
    const before = (await api(t.rootKey, "GET", "/v1/nodes/signing-keys")).keys;
    const admin = await open(keys.admin!, "/signing-keys");
    await admin.locator("[data-testid=signing-keys][data-loaded]").waitFor();
    await admin.click("[data-testid=rotate-signing-key]");
    await admin.click("button:text-is('Yes, rotate')");
    await admin.locator("[role=status]", { hasText: "New active key" }).waitFor();
    const after = (await api(t.rootKey, "GET", "/v1/nodes/signing-keys")).keys;
    const active = after.find((k: any) => k.status === "active");
    expect(after.length).toBe(before.length + 1);
    await expect.poll(() => admin.locator("tr", { hasText: active.key_id }).innerText(), { timeout: 15_000 }).toContain("active");
    // An admin of tenant default is no superadmin: no Tenants page.
    expect(await admin.locator("nav a", { hasText: "Tenants" }).count()).toBe(0);
    await admin.context().close();
    const operator = await open(keys.operator!, "/signing-keys");
    await operator.locator("[data-testid=signing-keys][data-loaded]").waitFor();
    expect(await operator.locator("[data-testid=rotate-signing-key]").count()).toBe(0);
    expect(await operator.locator("nav a", { hasText: "API keys" }).count()).toBe(1);
    await operator.context().close();
  }, 60_000);

  it("a viewer sees no write button and no admin page; the superadmin of default sees Tenants", async () => {
    const viewer = await open(keys.viewer!, "/communities");
    await viewer.locator("[data-testid=communities][data-loaded]").waitFor();
    for (const label of ["API keys", "Maintenance", "Tenants"]) expect(await viewer.locator("nav a", { hasText: label }).count(), label).toBe(0);
    expect(await viewer.locator("form, button:text-is('Edit'), button:text-is('Delete')").count()).toBe(0);
    for (const path of ["/doh-profiles", "/peers", "/routers"]) {
      await viewer.goto(`${t.url}/console${path}`);
      await viewer.locator("h1").waitFor();
      await viewer.waitForLoadState("networkidle");
      expect(await viewer.locator("form, button:text-is('New peer'), button:text-is('New router'), button:text-is('Delete')").count(), path).toBe(0);
    }
    await viewer.goto(`${t.url}/console/api-keys`);
    await viewer.locator("text=This page is not for a viewer key.").waitFor();
    await viewer.context().close();
    await page.click("nav >> text=Tenants");
    await page.fill("#new-tenant-name", "customer-a");
    await page.click("button:text-is('Create tenant')");
    await page.locator("[data-testid=secret]").waitFor();
    expect((await api(await page.inputValue("[data-testid=secret-value]"), "GET", "/v1/auth/session")).tenant_name).toBe("customer-a");
  }, 90_000);

  it("every form is filled and sent by keyboard alone, and no page has a serious axe-core violation", async () => {
    const forms: [string, string][] = [
      ["/api-keys", "New API key"],
      ["/communities", "New community"],
      ["/doh-profiles", "New DoH profile"],
      ["/maintenance", "New maintenance policy"],
      ["/tenants", "New tenant"],
    ];
    for (const [path, label] of forms) {
      await page.goto(`${t.url}/console${path}`);
      await page.locator(`form[aria-label='${label}']`).waitFor();
      const missed = await keyboardPass(page, `form[aria-label='${label}']`);
      expect(missed, `${path}: controls Tab never reached`).toEqual([]);
    }
    // Sent by keyboard: the community form, typed and submitted with Enter.
    await page.goto(`${t.url}/console/communities`);
    await page.locator("#new-community-community").focus();
    await page.keyboard.type("65000:200");
    await page.keyboard.press("Tab");
    await page.keyboard.type("by keyboard");
    await page.keyboard.press("Enter");
    await page.locator("[data-testid=communities] td", { hasText: "by keyboard" }).waitFor();

    const pages = [
      "/modules",
      "/routers",
      "/peers",
      "/communities",
      "/doh-profiles",
      "/api-keys",
      "/maintenance",
      "/signing-keys",
      "/tenants",
      "/revisions",
      "/settings",
    ];
    const found: string[] = [];
    for (const path of pages) {
      await page.goto(`${t.url}/console${path}`);
      await page.locator("h1").waitFor();
      await page.waitForLoadState("networkidle");
      for (const v of await seriousViolations(page)) found.push(`${path}: ${v}`);
      if (["/api-keys", "/maintenance", "/communities"].includes(path)) await writeShot(page, path.slice(1));
    }
    expect(found).toEqual([]);
  }, 120_000);
  it("adds a COUNTRY module with a country entry, and an exclude module that never steers, with their stale budgets", async () => {
    await page.goto(`${t.url}/console/modules`);
    await page.fill("input[name=module-name]", "netherlands");
    await page.selectOption("select[name=module-type]", "COUNTRY");
    await page.fill("input[name=module-max-stale-hours]", "72");
    await page.click("button:has-text('Create module')");
    await page.waitForURL(/\/console\/modules\/[0-9a-f-]{36}$/);
    const countryId = page.url().split("/").pop() ?? "";
    await page.fill("input[name=entry-value]", "nl");
    await page.click("button:has-text('Add entry')");
    await page.locator(`[data-testid=entries] td:text-is("NL")`).waitFor();
    await page.locator("[data-testid=entries] tr", { hasText: "NL" }).locator("button:has-text('Delete')").click();
    await expect.poll(() => page.locator("[data-testid=entries] tbody tr").count()).toBe(0);
    await page.fill("input[name=entry-value]", "BE");
    await page.click("button:has-text('Add entry')");
    await page.locator(`[data-testid=entries] td:text-is("BE")`).waitFor();
    expect(await text("dl.facts")).toContain("dropped 72 h after the source's last success");
    const country = await api(t.rootKey, "GET", `/v1/modules/${countryId}`);
    expect(country).toMatchObject({ type: "COUNTRY", action: "announce", max_stale_hours: 72 });
    expect((await api(t.rootKey, "GET", `/v1/modules/${countryId}/country-entries`)).items.map((e: { country: string }) => e.country)).toEqual(["BE"]);

    await page.goto(`${t.url}/console/modules`);
    await page.fill("input[name=module-name]", "bank");
    await page.selectOption("select[name=module-type]", "IP_RANGES");
    await page.selectOption("select[name=module-action]", "exclude");
    await page.fill("input[name=module-max-stale-hours]", "forever");
    await page.click("button:has-text('Create module')");
    await page.waitForURL(/\/console\/modules\/[0-9a-f-]{36}$/);
    const bankId = page.url().split("/").pop() ?? "";
    await page.fill("input[name=entry-value]", "193.0.10.0/24");
    await page.click("button:has-text('Add entry')");
    await page.locator(`[data-testid=entries] td:text-is("193.0.10.0/24")`).waitFor();
    expect(await text("dl.facts")).toContain("exclude: never steered");
    expect(await api(t.rootKey, "GET", `/v1/modules/${bankId}`)).toMatchObject({ action: "exclude", max_stale_hours: null });
    await page.goto(`${t.url}/console/modules`);
    await page.locator("[data-testid=modules] td", { hasText: "IP_RANGES (exclude)" }).waitFor();
  }, 90_000);
});
