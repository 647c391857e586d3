import { copyFileSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import type { Page } from "playwright-core";

// Steps the console's browser tests share: signing in, screenshots, axe-core.

const root = join(import.meta.dirname, "../..");
const shots = join(root, ".test-output/console");

export async function signIn(page: Page, key: string) {
  await page.waitForSelector("#api-key");
  await page.fill("#api-key", key);
  await page.click("button[type=submit]");
  await page.waitForSelector("[data-testid=role]");
}

/**
 * A screenshot in .test-output/console/<name>.png; with RLC_SCREENSHOTS=docs also in
 * docs/console/<name>.png, the pictures the README's console section shows (so a test run
 * does not rewrite tracked files unless asked to).
 */
export async function writeShot(page: Page, name: string) {
  mkdirSync(shots, { recursive: true });
  const file = join(shots, `${name}.png`);
  await page.screenshot({ path: file });
  if (process.env.RLC_SCREENSHOTS === "docs") {
    mkdirSync(join(root, "docs/console"), { recursive: true });
    copyFileSync(file, join(root, "docs/console", `${name}.png`));
  }
}

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core run inside the page: the violations rated serious or critical, one line each. */
export async function seriousViolations(page: Page): Promise<string[]> {
  const source = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
  await page.evaluate(source);
  const violations = (await page.evaluate("axe.run(document, { resultTypes: ['violations'] }).then((r) => r.violations)")) as AxeViolation[];
  return violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/**
 * Tabs from the form's first control through to its last and answers the controls (by name or
 * text) that keyboard focus never reached: every field, checkbox, select and button of a form
 * must be reachable without a mouse.
 */
export async function keyboardPass(page: Page, formSelector: string): Promise<string[]> {
  const form = page.locator(formSelector);
  const controls = await form.locator("input:not([disabled]), select, textarea, button:not([disabled]), summary").evaluateAll((els) =>
    els.map((el, i) => {
      el.setAttribute("data-kbd", String(i));
      return (el.getAttribute("name") ?? el.textContent ?? "").trim() || `#${i}`;
    }),
  );
  await form.locator("[data-kbd='0']").focus();
  const reached = new Set<string>(["0"]);
  for (let i = 0; i < controls.length * 2 + 5; i++) {
    await page.keyboard.press("Tab");
    const at = await page.evaluate(() => document.activeElement?.getAttribute("data-kbd") ?? null);
    if (at === null) break;
    reached.add(at);
  }
  return controls.filter((_, i) => !reached.has(String(i)));
}
