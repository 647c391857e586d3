#!/usr/bin/env node
// rlctl: the operator CLI. Every command talks to a running controller through @rlc/client.
import { CommanderError } from "commander";
import { loadBuildInfo } from "../lib/build-info.js";
import { describeFailure, ExitCode } from "./exit-codes.js";
import { buildProgram } from "./program.js";

// `rlctl … | head` closes stdout early: that is not a failure.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(ExitCode.ok);
});

try {
  await buildProgram(loadBuildInfo().version).parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Commander has printed the message (or the help); what is left is the exit code.
    process.exitCode = err.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  } else {
    const { code, message } = describeFailure(err);
    process.stderr.write(`rlctl: ${message}\n`);
    process.exitCode = code;
  }
}
