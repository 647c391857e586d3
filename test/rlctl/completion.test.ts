import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tool } from "../helpers/tools.js";
import { ensureRlctlBuilt, rlctlOk, tempHome } from "./run-rlctl.js";

// The completion scripts are generated from the command tree: they must at least be scripts
// the shells accept, and name the commands.

const zsh = tool("zsh");

describe("rlctl completion", () => {
  const home = tempHome();
  const dir = mkdtempSync(join(tmpdir(), "rlctl-completion-"));

  beforeAll(() => ensureRlctlBuilt());
  afterAll(() => {
    home.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `rlctl completion <shell>` written to a file; the shell's -n checks it without running it. */
  async function script(shell: "bash" | "zsh"): Promise<{ file: string; text: string }> {
    const { stdout } = await rlctlOk(home.home, ["completion", shell]);
    const file = join(dir, `rlctl.${shell}`);
    writeFileSync(file, stdout);
    return { file, text: stdout };
  }

  it("completion bash is a script bash -n accepts, completing commands, subcommands and options", async () => {
    const { file, text } = await script("bash");
    const check = spawnSync("bash", ["-n", file], { encoding: "utf8" });
    expect(check.stderr).toBe("");
    expect(check.status).toBe(0);
    expect(text).toContain("complete -o default -F _rlctl rlctl");
    expect(text).toMatch(/"modules"\) path="modules" ;;/);
    expect(text).toMatch(/"speakers status"\) words="[^"]*--watch/);

    // And it completes: the words offered after `rlctl revisions `.
    const offered = spawnSync("bash", ["-c", `source ${file}; COMP_WORDS=(rlctl revisions ""); COMP_CWORD=2; _rlctl; printf '%s\\n' "\${COMPREPLY[@]}"`], {
      encoding: "utf8",
    });
    expect(offered.stdout.trim().split("\n").sort()).toEqual(expect.arrayContaining(["diff", "ls", "show"]));
  });

  it.skipIf(!zsh.available)(
    zsh.available ? "completion zsh is a script zsh -n accepts" : `completion zsh is a script zsh -n accepts (skipped: ${zsh.reason})`,
    async () => {
      const { file, text } = await script("zsh");
      expect(text.startsWith("#compdef rlctl\n")).toBe(true);
      const check = spawnSync("zsh", ["-n", file], { encoding: "utf8" });
      expect(check.stderr).toBe("");
      expect(check.status).toBe(0);
    },
  );

  it("completion zsh names the commands and registers _rlctl", async () => {
    const { text } = await script("zsh");
    expect(text.startsWith("#compdef rlctl\n")).toBe(true);
    expect(text).toContain("compdef _rlctl rlctl");
    expect(text).toMatch(/"jobs"\) cands=\([^)]*watch/);
  });
});
