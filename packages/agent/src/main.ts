#!/usr/bin/env node
// rl-agent: wiring and signals only. Everything it runs is built in agent.ts and commands.ts.
import { hostname } from "node:os";
import { parseArgs } from "node:util";
import { BirdClient } from "@rlc/shared/bird";
import { loadBuildInfo } from "@rlc/shared/version";
import { type RunningAgent, startAgent } from "./agent.js";
import { protocolsCommand, statusWithExitCode } from "./commands.js";
import { ConfigError, loadConfig } from "./config.js";
import { environmentWithConfigFile } from "./config-file.js";
import { enroll, enrollmentSettings, NotEnrolledError } from "./enroll.js";
import { commandHelp, usage } from "./help.js";
import { createLogger } from "./log.js";
import { StateStore } from "./state.js";

// The single-file build (scripts/package.mjs) defines the version: it has no package beside it.
declare const __RL_AGENT_VERSION__: string | undefined;
/** From the sources or dist/, the repository's version by the one rule (shared's version.ts); the package sits one level above both. */
const VERSION = typeof __RL_AGENT_VERSION__ === "string" ? __RL_AGENT_VERSION__ : loadBuildInfo(new URL("../", import.meta.url)).version;

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: "boolean", default: false },
      force: { type: "boolean", default: false },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
      config: { type: "string" },
    },
  });
  if (values.version) return print(`${VERSION}\n`);
  const command = positionals[0];
  // `--help` is asked for: exit 0. No command at all is a usage error: the help on stderr, exit 2.
  if (values.help && !command) return print(usage());
  if (!command) return fail(usage(), 2);
  if (command === "help" || values.help) {
    const topic = command === "help" ? positionals[1] : command;
    if (!topic) return print(usage());
    const text = commandHelp(topic);
    return text ? print(text) : fail(`unknown command ${topic}\n${usage()}`, 2);
  }
  if (!commandHelp(command)) return fail(`unknown command ${command}\n${usage()}`, 2);
  const config = loadConfig(environmentWithConfigFile(process.env, values.config));
  switch (command) {
    case "run":
      return run(config);
    case "enroll": {
      const state = new StateStore(config.stateDir);
      await state.init();
      const existing = await state.readNode();
      if (existing && !values.force) {
        process.stderr.write(`already enrolled as speaker ${existing.speaker_id}; --force enrolls again with RL_ENROLLMENT_TOKEN\n`);
        return 1;
      }
      if (!config.enrollmentToken) throw new ConfigError("invalid configuration:\n  RL_ENROLLMENT_TOKEN: required to enroll");
      const log = createLogger(config.logLevel);
      if (config.insecure) log.warn("RL_INSECURE=true: the controller is not authenticated (http:// and plaintext gRPC allowed, enrollment without a CA hash)");
      const node = await enroll({
        ...enrollmentSettings(config),
        token: config.enrollmentToken,
        log,
        state,
        hostname: hostname(),
        agentVersion: VERSION,
        now: Date.now,
      });
      return print(`${JSON.stringify({ speaker_id: node.speaker_id, tenant_id: node.tenant_id, enrolled_at: node.enrolled_at })}\n`);
    }
    case "status":
    case "protocols": {
      const bird = new BirdClient({ socketPath: config.birdSocket, timeoutMs: 5000 });
      try {
        const deps = { bird, now: new Date() };
        if (command === "protocols") return print(await protocolsCommand(deps, { json: values.json }));
        const { text, code } = await statusWithExitCode({ ...deps, state: new StateStore(config.stateDir) }, { json: values.json });
        return print(text, code);
      } finally {
        bird.close();
      }
    }
    default:
      return fail(`unknown command ${command}\n${usage()}`, 2);
  }
}

async function run(config: ReturnType<typeof loadConfig>): Promise<number> {
  const log = createLogger(config.logLevel);
  const agent: RunningAgent = await startAgent(config, { version: VERSION, log });
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      // A second signal does not wait: the operator means it.
      if (stopping) return resolve(1);
      stopping = true;
      log.info("stopping", { signal });
      agent.stop().then(
        () => resolve(0),
        () => resolve(1),
      );
    };
    process.on("SIGTERM", () => stop("SIGTERM"));
    process.on("SIGINT", () => stop("SIGINT"));
    // `systemctl reload rl-agent`: sync now instead of at the next poll.
    process.on("SIGHUP", () => agent.loop.trigger({ reason: "manual" }));
  });
}

function print(text: string, code = 0): number {
  process.stdout.write(text);
  return code;
}

function fail(text: string, code: number): number {
  process.stderr.write(text);
  return code;
}

/** Lets stdout drain (a pipe may be slow) but does not wait for a handle left open. */
function exit(code: number): void {
  process.exitCode = code;
  setTimeout(() => process.exit(code), 2000).unref();
}

main(process.argv.slice(2)).then(exit, (error: unknown) => {
  const usage = error instanceof ConfigError || error instanceof NotEnrolledError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS");
  process.stderr.write(`rl-agent: ${(error as Error).message ?? String(error)}\n`);
  exit(usage ? 2 : 1);
});
