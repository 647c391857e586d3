import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";

// The documentation is a set of pages that link to each other (README.md → docs/*.md → folder
// READMEs): a page moved or a heading renamed must not leave a reader at a dead link.

const root = join(import.meta.dirname, "../..");
const skip = new Set(["node_modules", "dist", ".git", ".turbo", ".test-output"]);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    if (skip.has(e.name)) return [];
    const path = join(dir, e.name);
    if (e.isDirectory()) return markdownFiles(path);
    return e.name.endsWith(".md") ? [path] : [];
  });
}

/** The lines outside fenced code blocks, with their numbers. */
function prose(text: string): [number, string][] {
  let fenced = false;
  return text.split("\n").flatMap((line, i): [number, string][] => {
    if (line.startsWith("```")) fenced = !fenced;
    return fenced || line.startsWith("```") ? [] : [[i + 1, line]];
  });
}

/** GitHub's anchor of a heading: lower case, punctuation dropped (but `-` and `_`), spaces to `-`. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, "")
    .replace(/ /g, "-");
}

function anchorsOf(text: string): Set<string> {
  const found = new Set<string>();
  for (const [, line] of prose(text)) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading?.[1]) found.add(anchorOf(heading[1]));
  }
  return found;
}

/** The relative links of one Markdown page (`file`, read as `text`) that name a file or a heading that is not there. */
function deadLinksIn(file: string, text: string): string[] {
  const dead: string[] = [];
  for (const [n, line] of prose(text)) {
    for (const [, target = ""] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target)) continue;
      const [path = "", anchor] = target.split("#");
      const at = `${relative(root, file)}:${n}: ${target}`;
      const to = normalize(join(dirname(file), path));
      if (path && !existsSync(to)) dead.push(`${at} (no such file)`);
      else if (anchor && (path === "" || to.endsWith(".md")) && !anchorsOf(path ? readFileSync(to, "utf8") : text).has(anchor)) {
        dead.push(`${at} (no such heading)`);
      }
    }
  }
  return dead;
}

describe("the documentation's links", () => {
  it("every relative link in the repository's Markdown names a file and heading that exist", () => {
    const files = markdownFiles(root);
    expect(files.map((f) => relative(root, f))).toEqual(expect.arrayContaining(["README.md", "CONTRIBUTING.md", "docs/install.md"]));
    expect(files.flatMap((f) => deadLinksIn(f, readFileSync(f, "utf8")))).toEqual([]);
  });

  it("the README links to every page in docs/", () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const pages = readdirSync(join(root, "docs")).filter((f) => f.endsWith(".md"));
    expect(pages.filter((page) => !readme.includes(`(docs/${page})`))).toEqual([]);
  });

  it("a renamed heading or a moved page is found dead", () => {
    expect(anchorOf("Jobs: lanes, caps and waiting")).toBe("jobs-lanes-caps-and-waiting");
    expect(anchorOf("Metrics (`RL_METRICS_LISTEN`)")).toBe("metrics-rl_metrics_listen");
    // A page of docs/ given as text (nothing is written): its links are read from docs/.
    const page = join(root, "docs/__links-fixture__.md");
    const dead = deadLinksIn(page, "[a](install.md) [b](install.md#no-such-part) [c](gone.md) [d](https://example.net/x) [e](#here) [f](#there)\n\n## Here");
    expect(dead).toEqual([
      "docs/__links-fixture__.md:1: install.md#no-such-part (no such heading)",
      "docs/__links-fixture__.md:1: gone.md (no such file)",
      "docs/__links-fixture__.md:1: #there (no such heading)",
    ]);
  });
});
