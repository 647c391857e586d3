import { STATUS_EXIT } from "./commands.js";
import { DEFAULT_CONFIG_FILE } from "./config-file.js";
import { formatVariables } from "./variables.js";

// What `rl-agent --help` and `rl-agent help CMD` print: an operator at a router has no README.

interface CommandHelp {
  summary: string;
  usage: string;
  details: string;
}

export const COMMANDS: Record<string, CommandHelp> = {
  run: {
    summary: "enroll when needed, then keep BIRD in sync with the controller (the systemd service)",
    usage: "rl-agent run [--config FILE]",
    details: `Enrolls with RL_ENROLLMENT_TOKEN when the state directory holds no node key, then pulls
signed bundles, renders BIRD's configuration, reloads BIRD with a timed reload and confirms it.
SIGTERM/SIGINT stop it after an apply in flight; SIGHUP (systemctl reload rl-agent) syncs now.
Needs RL_CONTROLLER_URL.
`,
  },
  enroll: {
    summary: "spend RL_ENROLLMENT_TOKEN and store the node key (--force to enroll again)",
    usage: "rl-agent enroll [--force] [--config FILE]",
    details: `Exchanges the one-time token for the node key, stored in RL_STATE_DIR/node.json, and prints
the speaker and tenant it belongs to. Exit 1 when already enrolled (unless --force).
`,
  },
  status: {
    summary: "what the agent applied and whether BIRD answers; the exit code suits monitoring checks",
    usage: "rl-agent status [--json] [--config FILE]",
    details: `Prints the enrollment, the applied revision, the pinned signing keys, BIRD's state and BGP sessions.
Exit codes:
  ${STATUS_EXIT.inSync}  in sync: enrolled, BIRD answers, a bundle applied, every BGP session established
  ${STATUS_EXIT.degraded}  degraded or out of sync: nothing applied yet, or a BGP session not established
  ${STATUS_EXIT.down}  not enrolled, or BIRD's control socket does not answer
`,
  },
  protocols: {
    summary: "BIRD's BGP sessions as the agent reports them",
    usage: "rl-agent protocols [--json] [--config FILE]",
    details: "Reads `show protocols all` over BIRD's control socket. Exit 1 when BIRD does not answer.\n",
  },
  help: {
    summary: "this text, or one command's (rl-agent help status)",
    usage: "rl-agent help [COMMAND]",
    details: "",
  },
};

export function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((c) => c.length));
  const commands = Object.entries(COMMANDS)
    .map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}\n`)
    .join("");
  return `usage: rl-agent <command> [options]

commands:
${commands}
options:
  --config FILE  variables as NAME=value lines [default: ${DEFAULT_CONFIG_FILE}, skipped when absent];
                 a variable set in the environment wins over the file
  --json         status and protocols: JSON for scripts
  --force        enroll: enroll again
  -h, --help     this text
  --version      the agent's version

variables (environment or config file):
${formatVariables()}
exit codes: 0 done, 1 failed, 2 usage or configuration error (status: see rl-agent help status)
`;
}

export function commandHelp(name: string): string | null {
  const c = COMMANDS[name];
  if (!c) return null;
  return `usage: ${c.usage}\n\n${c.summary}\n\n${c.details}`;
}
