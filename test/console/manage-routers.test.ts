import type { ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAgentProcess } from "../helpers/agent-process.js";
import { type BirdLab, startBirdLab, stopProcess } from "../helpers/bird-lab.js";
import { chromiumTool, ensureConsoleBuilt, launchChromium } from "../helpers/browser.js";
import { type LiveController, startLiveController, until, untilJobDone } from "../helpers/live-controller.js";
import { tool } from "../helpers/tools.js";
import { keyboardPass, seriousViolations, signIn, writeShot } from "./console-steps.js";

// An operator's day with routers, in a real browser against a listening controller: a router is
// created in the console, its one-time token copied from the page enrolls a real rl-agent (which
// drives BIRD), a peer created in the console (GoBGP on 127.0.0.2) turns Established on it, and
// the routers page shows it in sync.

const missing = [...["bird", "birdc", "gobgpd", "gobgp"].filter((bin) => !tool(bin).available), ...(chromiumTool().available ? [] : ["chromium"])];
const title = "console: create a router, enroll its agent from the copied token, create a peer and see its session";
const natsUrl = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

describe.skipIf(missing.length > 0)(missing.length > 0 ? `${title} (skipped: ${missing.join(", ")} not on PATH)` : title, () => {
  let t: LiveController;
  let bird: BirdLab;
  let agent: { child: ChildProcess; log(): string } | null = null;
  let browser: Browser;
  let page: Page;
  let dir = "";
  let speakerId = "";
  let peerId = "";

  const api = async (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, payload?: object) => {
    const res = await t.call(t.rootKey, method, url, payload);
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.statusCode === 204 ? null : res.json();
  };
  const text = (selector: string) => page.locator(selector).first().innerText();

  beforeAll(async () => {
    ensureConsoleBuilt();
    dir = mkdtempSync(join(tmpdir(), "rl-console-manage-"));
    const etc = join(dir, "etc");
    mkdirSync(etc);
    bird = await startBirdLab(dir, etc);
    t = await startLiveController({ env: { NATS_URL: natsUrl } });
    await api("PATCH", "/v1/settings", { BIRD: { confirm_after_seconds: 2 } });
    // A revision to apply: one module with two prefixes.
    const community = await api("POST", "/v1/communities", { community: "65000:100", title: "via-vpn" });
    const mod = await api("POST", "/v1/modules", { name: "vpn", type: "IP_RANGES", community_id: community.id });
    for (const cidr of ["11.1.0.0/16", "2a00:1::/32"]) await api("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr });
    const refresh = await api("POST", "/v1/modules/refresh", {});
    expect((await untilJobDone(t, refresh.job_id)).status).toBe("succeeded");
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: t.url });
    page = await context.newPage();
    await page.goto(`${t.url}/console/routers`);
    await signIn(page, t.rootKey);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    if (t) {
      for (const job of (await t.call(t.rootKey, "GET", "/v1/jobs?status=awaiting")).json().items ?? [])
        await t.call(t.rootKey, "POST", `/v1/jobs/${job.job_id}/cancel`);
    }
    await stopProcess(agent?.child ?? null);
    await bird?.stop();
    await t?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("creates a router: the API's error shows under the field it names, then the token is shown once and copied with the install snippet", async () => {
    await page.click("button:text-is('New router')");
    await page.fill("#new-speaker-name", "edge-new");
    await page.fill("#new-speaker-router_id", "300.1.1.1");
    await page.fill("#new-speaker-asn", "65000");
    await page.click("summary:has-text('BGP addresses')");
    await page.fill("[id='new-speaker-policies_json.local_ip']", "127.0.0.1");
    await page.fill("[id='new-speaker-policies_json.local_port']", String(bird.birdPort));
    // GoBGP drops routes whose next hop is a loopback address.
    await page.fill("[id='new-speaker-policies_json.next_hop_ipv4']", "198.51.100.254");
    await page.fill("[id='new-speaker-policies_json.next_hop_ipv6']", "2001:db8::254");
    expect(await keyboardPass(page, "form[aria-label='New router']"), "controls Tab never reached").toEqual([]);
    await page.click("button:text-is('Create router')");
    const fieldError = page.locator("[data-field-error=router_id]");
    await fieldError.waitFor();
    expect(await fieldError.innerText()).toMatch(/\S/);
    expect(await page.getAttribute("#new-speaker-router_id", "aria-invalid")).toBe("true");
    expect((await api("GET", "/v1/speakers")).items).toEqual([]);

    await page.fill("#new-speaker-router_id", "127.0.0.1");
    await page.click("button:text-is('Create router')");
    await page.locator("[data-testid=enrollment]").waitFor();
    const token = await page.inputValue("[data-testid=enrollment-token]");
    expect(token).toMatch(/^rlt_/);
    expect(await text("[data-testid=agent-env]")).toContain(`RL_ENROLLMENT_TOKEN=${token}`);
    expect(await text("[data-testid=install-snippet]")).toMatch(/sudo apt install \.\/rl-agent_.+_amd64\.deb/);
    await page.click("[data-testid=copy-token]");
    await page.locator("[data-testid=enrollment] [role=status]", { hasText: "Copied." }).first().waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toBe(token);
    await writeShot(page, "routers-new-router-token");
    const speaker = (await api("GET", "/v1/speakers")).items.find((s: any) => s.name === "edge-new");
    speakerId = speaker.id;

    // The token copied from the page enrolls a real agent.
    agent = startAgentProcess({ controllerUrl: t.url, enrollmentToken: copied, dir, etc: join(dir, "etc") });
    const enrolling = agent;
    await until("the agent to enroll", async () => (await api("GET", `/v1/speakers/${speakerId}`)).enrolled_at, 90_000, 250).catch((error: Error) => {
      throw new Error(`${error.message}; agent log: ${enrolling.log().slice(-2000)}`);
    });
    await page.click("button:text-is('I have copied it')");
    expect(await page.locator("[data-testid=enrollment]").count()).toBe(0);
  }, 150_000);

  it("creates a peer on that router; its session per router turns Established and the router is in sync", async () => {
    await page.click("nav >> text=Peers");
    await page.click("button:text-is('New peer')");
    expect(await keyboardPass(page, "form[aria-label='New peer']"), "controls Tab never reached").toEqual([]);
    await page.fill("#new-peer-name", "gobgp");
    await page.fill("#new-peer-neighbor_address", "127.0.0.2");
    await page.fill("#new-peer-neighbor_port", String(bird.gobgpPort));
    await page.fill("#new-peer-remote_asn", "65001");
    await page.fill("#new-peer-multihop", "yes");
    await page.check("fieldset:has-text('Routers that carry it') >> label:has-text('edge-new') >> input");
    await page.click("button:text-is('Create peer')");
    await page.waitForURL(/\/console\/peers\/[0-9a-f-]{36}$/);
    peerId = page.url().split("/").pop() ?? "";
    await expect.poll(() => text("[data-testid=peer-session-state]"), { timeout: 90_000, interval: 500 }).toBe("Established");
    expect(await text("[data-testid=peer-sessions]")).toContain("edge-new");
    await writeShot(page, "peer-session");

    await page.click("[data-testid=peer-sessions] a:has-text('edge-new')");
    await page.waitForURL(new RegExp(`/console/routers/${speakerId}$`));
    // The router names the BGP protocol by its peer, with a link back.
    await expect.poll(() => text("[data-testid=sessions]"), { timeout: 30_000 }).toContain("gobgp");
    expect(await text("[data-testid=router-peers]")).toContain("gobgp");
    await page.click("nav >> text=Routers");
    await expect.poll(() => text("[data-testid=speakers]"), { timeout: 60_000 }).toMatch(/edge-new[\s\S]*in_sync/);
    // The apply the peer queued names its router, linked.
    await page.click("nav >> text=Jobs");
    await page.selectOption(".filters select >> nth=0", "apply");
    await page.locator("[data-testid=jobs] a", { hasText: "edge-new" }).first().waitFor({ timeout: 15_000 });
  }, 150_000);

  it("edits the peer: the password is write-only (set, never shown, then removed)", async () => {
    await page.goto(`${t.url}/console/peers/${peerId}`);
    await page.click("button:text-is('Edit')");
    const box = `[id='peer-${peerId}-password']`;
    expect(await page.inputValue(box)).toBe("");
    await page.fill(box, "s3cret-md5");
    await page.click("button:text-is('Save peer')");
    await expect.poll(() => text("[data-testid=peer-password]"), { timeout: 15_000 }).toContain("set");
    expect((await api("GET", `/v1/peers/${peerId}`)).password_set).toBe(true);
    expect(await page.content()).not.toContain("s3cret-md5");
    await page.click("button:text-is('Edit')");
    expect(await page.inputValue(box)).toBe("");
    await page.check("label:has-text('Remove the password') >> input");
    await page.click("button:text-is('Save peer')");
    await expect.poll(() => text("[data-testid=peer-password]"), { timeout: 15_000 }).toBe("none");
    expect((await api("GET", `/v1/peers/${peerId}`)).password_set).toBe(false);
  }, 60_000);

  it("the pictures draw the numbers the API gives: prefixes per revision, per community, the fleet's state; axe finds nothing serious", async () => {
    // A second revision: one prefix more.
    const mod = (await api("GET", "/v1/modules")).items[0];
    await api("POST", `/v1/modules/${mod.id}/ip-range-entries`, { cidr: "11.2.0.0/16" });
    expect((await untilJobDone(t, (await api("POST", "/v1/modules/refresh", {})).job_id)).status).toBe("succeeded");
    const revisions = (await api("GET", "/v1/revisions")).items.sort((a: any, b: any) => a.revision_id - b.revision_id);
    expect(revisions.length).toBe(2);

    await page.goto(`${t.url}/console/revisions`);
    const drawn = async (testId: string) => {
      await page.locator(`[data-testid=${testId}] canvas`).first().waitFor();
      return JSON.parse((await page.getAttribute(`[data-testid=${testId}]`, "data-points")) ?? "null");
    };
    const lines = await drawn("chart-revisions");
    expect(lines.x).toEqual(revisions.map((r: any) => Math.floor(Date.parse(r.created_at) / 1000)));
    expect(lines.series[0]).toEqual({ label: "IPv4", values: revisions.map((r: any) => r.prefix_count_v4) });
    expect(lines.series[1]).toEqual({ label: "IPv6", values: revisions.map((r: any) => r.prefix_count_v6) });
    // The guard's line: the default 50% of the current revision's 3 prefixes may be withdrawn, so no fewer than 2 may stay.
    expect(lines.series[3].values).toEqual([2, 2]);
    const numbers = await page.locator("[data-testid=revisions-numbers] tbody tr").allInnerTexts();
    expect(
      numbers.map((r) =>
        r
          .split("\t")
          .filter((_, i) => i !== 1)
          .join(" "),
      ),
    ).toEqual(revisions.map((r: any) => `${r.revision_id} ${r.prefix_count_v4} ${r.prefix_count_v6} ${r.prefix_count_v4 + r.prefix_count_v6}`));

    const current = revisions[revisions.length - 1];
    const preview = await api("GET", `/v1/revisions/${current.revision_id}/preview`);
    const bars = await drawn("chart-communities");
    expect(bars.series[0].values).toEqual(preview.by_community.map((g: any) => g.prefix_count));
    expect(bars.series[0].values).toEqual([3]);
    expect(await page.locator("[data-testid=communities-numbers] tbody").innerText()).toContain("65000:100 via-vpn\t3");
    await writeShot(page, "revisions-pictures");
    expect(await seriousViolations(page)).toEqual([]);

    await page.click("nav >> text=Routers");
    // The one router's state as the API reports it: failed on an error, in sync, else pending (it reported just now: not stale).
    const [s] = (await api("GET", "/v1/speakers")).items;
    expect(Date.now() - Date.parse(s.last_seen_at)).toBeLessThan(5 * 60_000);
    const state = s.dispatch_status === "failed" || s.sync_status === "error" ? "failed" : s.sync_status === "in_sync" ? "in sync" : "pending";
    const fleet = await drawn("chart-fleet");
    expect(fleet.series[0].values).toEqual(["in sync", "pending", "failed", "stale"].map((x) => (x === state ? 1 : 0)));
    expect(await page.locator(`[data-testid=fleet-numbers] tr[data-state='${state}'] td`).innerText()).toBe("1");
    await writeShot(page, "routers-fleet");
    expect(await seriousViolations(page)).toEqual([]);
    await page.goto(`${t.url}/console/peers/${peerId}`);
    await page.locator("[data-testid=peer-session-state]").first().waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // The router's session timeline draws the history the API keeps: a lane per session named by
    // its peer, high (lane + 0.75) while Established and low (lane + 0.25) otherwise, at each
    // change and now; the changes in the table, newest first. (The session came up in the second
    // step; the password edits since may have taken it down again.)
    // The page and this test each read the history: a change the agent reports between the two
    // reads (the session settling after the password edits) makes them differ, so both are read
    // again until they are of one moment.
    let history: any[] = [];
    let timeline: Awaited<ReturnType<typeof drawn>> | null = null;
    let times: number[] = [];
    for (let tries = 0; tries < 10; tries++) {
      await page.goto(`${t.url}/console/routers/${speakerId}`);
      timeline = await drawn("chart-sessions");
      history = (await api("GET", `/v1/speakers/${speakerId}/sessions/history?limit=500`)).items;
      times = [...new Set(history.map((c: any) => Date.parse(c.at) / 1000))] as number[];
      if (JSON.stringify(timeline.x.slice(0, -1)) === JSON.stringify(times)) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    if (!timeline) throw new Error("no timeline drawn");
    const ours = history.filter((c: any) => c.peer_id === peerId);
    expect(ours.some((c: any) => c.peer_name === "gobgp" && c.current?.bgp_state === "Established")).toBe(true);
    expect(timeline.x.slice(0, -1)).toEqual(times);
    const protocols = [...new Set(history.map((c: any) => c.protocol))];
    const lane = protocols.indexOf(ours[0].protocol);
    expect(timeline.series[lane].label).toBe("gobgp");
    const level = (c: any) => (c?.current ? lane + (c.current.bgp_state === "Established" ? 0.75 : 0.25) : null);
    const expected = [...times, Number.POSITIVE_INFINITY].map((x) => level(ours.filter((c: any) => Date.parse(c.at) / 1000 <= x).pop()));
    expect(timeline.series[lane].values).toEqual(expected);
    const rows = await page.locator("[data-testid=session-history-numbers] tbody tr").allInnerTexts();
    expect(rows.length).toBe(history.length);
    const newest = ours[ours.length - 1];
    expect(rows.find((r) => r.includes("gobgp"))).toContain(
      `gobgp\t${newest.previous?.bgp_state ?? newest.previous?.state ?? "gone"}\t${newest.current?.bgp_state ?? newest.current?.state ?? "gone"}`,
    );
    await writeShot(page, "router-sessions");
    expect(await seriousViolations(page)).toEqual([]);
  }, 120_000);

  it("deleting a peer asks once: Cancel keeps it, Yes deletes it", async () => {
    await page.goto(`${t.url}/console/peers/${peerId}`);
    await page.click("[data-testid=delete-peer]");
    await page.locator("[role=group][aria-label^='Delete peer gobgp']").waitFor();
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel");
    await page.keyboard.press("Enter");
    expect((await api("GET", `/v1/peers/${peerId}`)).name).toBe("gobgp");
    await page.click("[data-testid=delete-peer]");
    await page.click("button:text-is('Yes, delete')");
    await page.waitForURL(/\/console\/peers$/);
    expect((await t.call(t.rootKey, "GET", `/v1/peers/${peerId}`)).statusCode).toBe(404);
  }, 60_000);
});
