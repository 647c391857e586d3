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
