import type { Command } from "commander";
import { usageError } from "../exit-codes.js";

/** Every command path with its subcommands and options, read from the program itself. */
function tree(cmd: Command, path: string[] = [], out = new Map<string, string[]>()): Map<string, string[]> {
  const words = [...cmd.commands.flatMap((c) => [c.name()]), ...cmd.options.flatMap((o) => [o.long, o.short].filter((x): x is string => Boolean(x)))];
  if (path.length === 0) words.push("--help", "--version");
  out.set(path.join(" "), words);
  for (const c of cmd.commands) tree(c, [...path, c.name()], out);
  return out;
}

/**
 * The part both scripts share: walk the words typed so far (options skipped) down to the deepest
 * known command path in `pathVar`, then offer that path's words through `offer`.
 */
function dispatch(program: Command, pathVar: string, offer: (words: string) => string): string {
  const paths = [...tree(program)];
  return `    [[ "$w" == -* ]] && continue
    case "\${${pathVar}:+$${pathVar} }$w" in
${paths
  .filter(([p]) => p)
  .map(([p]) => `      "${p}") ${pathVar}="${p}" ;;`)
  .join("\n")}
    esac
  done
  case "$${pathVar}" in
${paths.map(([p, words]) => `    "${p}") ${offer(words.join(" "))} ;;`).join("\n")}
    *) ${offer("")} ;;
  esac`;
}

function bash(program: Command): string {
  return `# rlctl bash completion: eval "$(rlctl completion bash)" (or save it in /etc/bash_completion.d/rlctl)
_rlctl() {
  local cur path="" i w words
  cur="\${COMP_WORDS[COMP_CWORD]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
${dispatch(program, "path", (words) => `words="${words}"`)}
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -o default -F _rlctl rlctl
`;
}

function zsh(program: Command): string {
  return `#compdef rlctl
# rlctl zsh completion: eval "$(rlctl completion zsh)" after compinit, or save it as _rlctl in your $fpath
_rlctl() {
  # Not "path" nor "words": zsh ties the one to PATH and fills the other with the command line.
  local cmdpath="" w
  local -a cands
  for w in \${words[2,CURRENT-1]}; do
${dispatch(program, "cmdpath", (words) => `cands=(${words})`)}
  compadd -- $cands || _files
}
compdef _rlctl rlctl
`;
}

export function completionCommand(program: Command): void {
  program
    .command("completion <shell>")
    .description("print a completion script: bash or zsh")
    .action((shell: string) => {
      if (shell === "bash") process.stdout.write(bash(program));
      else if (shell === "zsh") process.stdout.write(zsh(program));
      else throw usageError(`completion ${shell}: choose bash or zsh`);
    });
}
