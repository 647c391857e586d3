import { Command } from "commander";
import { auditCommand, keysCommand } from "./commands/access.js";
import { applyCommand } from "./commands/apply.js";
import { cdnSourcesCommand } from "./commands/cdn-sources.js";
import { communitiesCommand } from "./commands/communities.js";
import { completionCommand } from "./commands/completion.js";
import { configCommand } from "./commands/config.js";
import { entriesCommand } from "./commands/entries.js";
import { jobsCommand, refreshCommand } from "./commands/jobs.js";
import { modulesCommand } from "./commands/modules.js";
import { lookupCommand, revisionsCommand } from "./commands/revisions.js";
import { speakersCommand } from "./commands/speakers.js";
import { exitCodeHelp } from "./exit-codes.js";

const environment = `Connection (first found wins):
  --url, --api-key            on the command line
  RL_URL, RL_API_KEY          in the environment
  --profile NAME, RL_PROFILE  a profile of $XDG_CONFIG_HOME/rlctl/config.json (default ~/.config/rlctl/config.json),
                              or the file's current one (rlctl config set NAME --url URL --api-key KEY)

Colour only on a terminal and without NO_COLOR. Modules, speakers and communities are named by id or name.

The daily loop:
  rlctl modules add streaming --type ip --community 65000:100
  rlctl entries add streaming 198.51.100.0/24 2001:db8::/32
  rlctl refresh streaming                 # progress bar; Ctrl-C leaves the job running
  rlctl revisions diff previous current
  rlctl apply                             # per-speaker progress; exit 6 when a speaker refuses
  rlctl speakers status --watch`;

/** The whole command tree; `main.ts` runs it, the completion scripts are read from it. */
export function buildProgram(version: string): Command {
  const program = new Command("rlctl");
  program
    .description("Operator CLI of the route-list controller: route lists, refreshes, revisions, applies and speakers.")
    .version(version, "-V, --version")
    .option("-o, --output <format>", "table, json or yaml", "table")
    .option("--profile <name>", "a profile of the config file")
    .option("--url <url>", "the controller's URL (overrides RL_URL and the profile)")
    .option("--api-key <key>", "the API key (overrides RL_API_KEY and the profile)")
    .showHelpAfterError("(rlctl --help lists the commands)")
    .exitOverride()
    .addHelpText("after", `\n${environment}\n\n${exitCodeHelp}\n`);
  modulesCommand(program);
  entriesCommand(program);
  communitiesCommand(program);
  cdnSourcesCommand(program);
  refreshCommand(program);
  jobsCommand(program);
  revisionsCommand(program);
  lookupCommand(program);
  applyCommand(program);
  speakersCommand(program);
  keysCommand(program);
  auditCommand(program);
  configCommand(program);
  completionCommand(program);
  return program;
}
